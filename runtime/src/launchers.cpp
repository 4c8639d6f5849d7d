// The launcher table (launchers.h): every launcher's name is spelled here and nowhere else
// (launch_launchers_test.cpp scans the sources for a second spelling).
#include "distmetrics/runtime/launchers.h"

#include <cstdlib>

#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::runtime {

const std::vector<Launcher>& launchers() {
  static const std::vector<Launcher> table = {
      {LauncherId::Local,
       "local",
       "this process starts and supervises its own rank pools (the default)",
       "a supervised rank pool",
       false,
       false,
       {},
       PoolLaunch{"direct", "the pool starts its workers itself (forked from its zygote, or its worker command)", false}},
      {LauncherId::Mpi,
       "mpi",
       "every process is a rank started by mpirun (Open MPI's environment)",
       "started by mpirun",
       true,
       true,
       {"OMPI_COMM_WORLD_SIZE"},
       PoolLaunch{"mpirun", "mpirun starts the pool's workers, which are the MPI ranks (the mpi backend's)", true}},
      {LauncherId::Env,
       "env",
       "every process is a rank started by a torchrun-style launcher (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, "
       "MASTER_PORT)",
       "RANK, WORLD_SIZE, ... set",
       true,
       false,
       {"WORLD_SIZE", "RANK"},
       std::nullopt},
  };
  return table;
}

const Launcher& launcher(LauncherId id) {
  for (const auto& l : launchers())
    if (l.id == id) return l;
  throw ConfigError("no launcher of id " + std::to_string(static_cast<int>(id)) + " in the launcher table");
}

const Launcher* find_launcher(const std::string& name) {
  for (const auto& l : launchers())
    if (l.name == name) return &l;
  return nullptr;
}

const Launcher& local_launcher() { return launcher(LauncherId::Local); }

std::vector<std::string> launcher_names() {
  std::vector<std::string> names;
  for (const auto& l : launchers()) names.push_back(l.name);
  return names;
}

std::string detect_launcher() {
  for (const auto& l : launchers()) {
    if (l.detected_by.empty()) continue;
    bool all = true;
    for (const auto& variable : l.detected_by) all = all && std::getenv(variable.c_str()) != nullptr;
    if (all) return l.name;
  }
  return "";
}

std::string launcher_error_prefix(LauncherId id) { return launcher(id).name + " launcher: "; }

std::vector<PoolLaunch> pool_launches() {
  std::vector<PoolLaunch> pools;
  for (const auto& l : launchers())
    if (l.pool) pools.push_back(*l.pool);
  return pools;
}

const PoolLaunch& find_pool_launch(const std::string& name) {
  for (const auto& l : launchers())
    if (l.pool && l.pool->name == name) return *l.pool;
  std::vector<std::string> names;
  for (const auto& p : pool_launches()) names.push_back(p.name);
  throw ConfigError("rank pool: launch must be one of " + quoted_list(names) + ", got '" + name + "'" +
                    did_you_mean(name, names));
}

const PoolLaunch& direct_pool_launch() { return *local_launcher().pool; }

}  // namespace distmetrics::runtime
