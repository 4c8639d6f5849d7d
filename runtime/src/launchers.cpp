// The launcher tables (launchers.h).
#include "distmetrics/runtime/launchers.h"

#include <cstdlib>

#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::runtime {

const std::vector<Launcher>& launchers() {
  static const std::vector<Launcher> table = {
      {"local", "this process starts and supervises its own rank pools (the default)", false, false, {}},
      {"mpi", "every process is a rank started by mpirun (Open MPI's environment)", true, true, {"OMPI_COMM_WORLD_SIZE"}},
      {"env", "every process is a rank started by a torchrun-style launcher (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, "
              "MASTER_PORT)",
       true, false, {"WORLD_SIZE", "RANK"}},
  };
  return table;
}

const Launcher* find_launcher(const std::string& name) {
  for (const auto& l : launchers())
    if (l.name == name) return &l;
  return nullptr;
}

const Launcher& local_launcher() { return launchers().front(); }

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

const std::vector<PoolLaunch>& pool_launches() {
  static const std::vector<PoolLaunch> table = {
      {"direct", "the pool starts its workers itself (forked from its zygote, or its worker command)", false},
      {"mpirun", "mpirun starts the pool's workers, which are the MPI ranks (the mpi backend's)", true},
  };
  return table;
}

const PoolLaunch& find_pool_launch(const std::string& name) {
  for (const auto& p : pool_launches())
    if (p.name == name) return p;
  std::vector<std::string> names;
  for (const auto& p : pool_launches()) names.push_back(p.name);
  throw ConfigError("rank pool: launch must be one of " + quoted_list(names) + ", got '" + name + "'" +
                    did_you_mean(name, names));
}

const PoolLaunch& direct_pool_launch() { return pool_launches().front(); }

}  // namespace distmetrics::runtime
