// How a run's ranks are started: ONE table of launchers, one entry per launcher. An entry says
// what the CLI's --launcher does with it (this process supervising its own rank pools, or every
// process a rank started by mpirun or a torchrun-style launcher) and, where a local rank pool can
// start its workers through it, how (PoolLaunch: a backend's pool_launch, backends.h). Code asks
// these descriptors, or names an entry by its LauncherId; no other code spells a launcher's name.
// docs/runtime.md, "Launch modes".
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace distmetrics::runtime {

// An entry of the table, for the code that needs one launcher in particular (the peer runner
// reading its environment, the backend table naming the launchers a backend runs under).
enum class LauncherId { Local, Mpi, Env };

// How a local rank pool starts its workers through a launcher.
struct PoolLaunch {
  // Its name in PoolOptions::launch, the worker's --launch flag, Backend::pool_launch and a
  // variant's "launch" (distmetrics list --json).
  std::string name;
  std::string description;
  bool through_mpirun = false;  // mpirun starts the workers (in a build with Open MPI)
};

struct Launcher {
  LauncherId id = LauncherId::Local;
  std::string name;  // --launcher's value
  std::string description;
  std::string help;  // what --launcher's help says of it, after its name
  // Every process is a rank (runtime::PeerRunner), started by something else; false: this process
  // starts and supervises its own rank pools.
  bool peers = false;
  // Peers whose world comes from MPI: each forks its MPI agent before MPI_Init, and rank 0 sends
  // the rendezvous's address to the others through MPI. False: from the environment alone (RANK,
  // WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
  bool through_mpi = false;
  // The environment variables that, all set, say this process was started by it (detect_launcher).
  std::vector<std::string> detected_by;
  // How a local rank pool starts its workers this way; none where a pool cannot (env).
  std::optional<PoolLaunch> pool;
};

const std::vector<Launcher>& launchers();
const Launcher& launcher(LauncherId id);
const Launcher* find_launcher(const std::string& name);
// The launcher of a plain command: this process supervises its own rank pools.
const Launcher& local_launcher();
std::vector<std::string> launcher_names();
// The launcher whose environment this process was started in, or empty (a plain command).
std::string detect_launcher();
// "<name> launcher: ", the start of the launcher's own errors.
std::string launcher_error_prefix(LauncherId id);

// The pool launches of the table's entries, in table order.
std::vector<PoolLaunch> pool_launches();
// The pool launch of that name; throws ConfigError naming the known ones.
const PoolLaunch& find_pool_launch(const std::string& name);
// The pool launch a pool gets when nothing asks for another: the local launcher's (direct).
const PoolLaunch& direct_pool_launch();

}  // namespace distmetrics::runtime
