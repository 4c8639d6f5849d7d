#include "peer_env.h"

#include <unistd.h>

#include <cstdlib>
#include <exception>

#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/launchers.h"

namespace distmetrics::runtime::detail {
namespace {

constexpr const char* kEnvVariables = "RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT";

int env_int(const EnvLookup& env, const std::string& launcher, const char* name, std::optional<int> fallback = std::nullopt) {
  const auto text = env(name);
  if (!text) {
    if (fallback) return *fallback;
    throw ConfigError(launcher + " launcher: " + name + " is not set (a torchrun-style launcher sets " + kEnvVariables + ")");
  }
  try {
    size_t used = 0;
    const int value = std::stoi(*text, &used);
    if (used == text->size() && value >= 0) return value;
  } catch (const std::exception&) {
  }
  throw ConfigError(launcher + " launcher: " + name + "=" + *text + " is not a non-negative integer");
}

void check_rank_in_world(const PeerLaunch& launch) {
  if (launch.world_size < 1 || launch.rank >= launch.world_size) {
    throw ConfigError(launch.launcher + " launcher: rank " + std::to_string(launch.rank) + " is not in a world of " +
                      std::to_string(launch.world_size));
  }
}

void read_common(const EnvLookup& env, PeerLaunch& launch) {
  launch.run_secret = env("DISTMETRICS_RUN_SECRET").value_or("");
  launch.gloo_socket_ifname = env("GLOO_SOCKET_IFNAME").value_or("");
  launch.mpi_session_dir = env("OMPI_MCA_orte_jobfam_session_dir").value_or("");
  launch.gloo_address = launch.one_host || launch.local_world_size == launch.world_size ? "127.0.0.1" : "";
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  };
}

std::string this_host_name() {
  char name[256] = {0};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

bool is_loopback(const std::string& host) { return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0; }

PeerLaunch read_env_launch(const EnvLookup& env, const std::string& this_host) {
  PeerLaunch launch;
  launch.launcher = launcher(LauncherId::Env).name;
  const std::string says = launcher_error_prefix(LauncherId::Env);
  launch.rank = env_int(env, launch.launcher, "RANK");
  launch.world_size = env_int(env, launch.launcher, "WORLD_SIZE");
  launch.local_rank = env_int(env, launch.launcher, "LOCAL_RANK", 0);
  launch.local_world_size = env_int(env, launch.launcher, "LOCAL_WORLD_SIZE", launch.world_size);
  launch.master_addr = env("MASTER_ADDR").value_or("");
  if (launch.master_addr.empty()) {
    throw ConfigError(says + "MASTER_ADDR is not set (a torchrun-style launcher sets " + kEnvVariables + ")");
  }
  launch.master_port = env_int(env, launch.launcher, "MASTER_PORT");
  if (launch.master_port == 0 || launch.master_port > 65535) {
    throw ConfigError(says + "MASTER_PORT must be a port in 1..65535");
  }
  check_rank_in_world(launch);
  launch.one_host = is_loopback(launch.master_addr) ||
                    (launch.master_addr == this_host && env("LOCAL_WORLD_SIZE") && launch.local_world_size == launch.world_size);
  read_common(env, launch);
  if (!launch.one_host && launch.run_secret.empty()) {
    throw ConfigError(
        says + "ranks on several hosts need the run's secret: set DISTMETRICS_RUN_SECRET to the same random "
        "value on every rank (e.g. export DISTMETRICS_RUN_SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')); "
        "rank 0's rendezvous store refuses connections without it");
  }
  return launch;
}

PeerLaunch read_mpi_launch(const EnvLookup& env, int rank, int world_size, int ranks_on_node) {
  PeerLaunch launch;
  launch.launcher = launcher(LauncherId::Mpi).name;
  launch.rank = rank;
  launch.world_size = world_size;
  launch.local_rank = env_int(env, launch.launcher, "OMPI_COMM_WORLD_LOCAL_RANK", 0);
  launch.local_world_size = env_int(env, launch.launcher, "OMPI_COMM_WORLD_LOCAL_SIZE", world_size);
  if (env("MASTER_ADDR") && env("MASTER_PORT")) {
    launch.master_addr = *env("MASTER_ADDR");
    launch.master_port = env_int(env, launch.launcher, "MASTER_PORT");
  }
  check_rank_in_world(launch);
  launch.one_host = ranks_on_node == world_size;
  read_common(env, launch);
  return launch;
}

}  // namespace distmetrics::runtime::detail
