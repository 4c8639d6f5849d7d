// How a run's ranks are started: ONE table of launchers (the CLI's --launcher: this process
// supervising its own rank pools, or every process a rank started by mpirun or a torchrun-style
// launcher) and ONE table of how a local rank pool starts its workers (a backend's pool_launch,
// backends.h). Code asks these descriptors what a launcher does; no other code compares a
// launcher's name. docs/runtime.md, "Launch modes".
#pragma once

#include <string>
#include <vector>

namespace distmetrics::runtime {

struct Launcher {
  std::string name;  // "local", "mpi", "env"
  std::string description;
  // Every process is a rank (runtime::PeerRunner), started by something else; false: this process
  // starts and supervises its own rank pools.
  bool peers = false;
  // Peers whose world comes from MPI: each forks its MPI agent before MPI_Init, and rank 0 sends
  // the rendezvous's address to the others through MPI. False: from the environment alone (RANK,
  // WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
  bool through_mpi = false;
  // The environment variables that, all set, say this process was started by it (detect_launcher).
  std::vector<std::string> detected_by;
};

const std::vector<Launcher>& launchers();
const Launcher* find_launcher(const std::string& name);
// The launcher of a plain command: this process supervises its own rank pools.
const Launcher& local_launcher();
std::vector<std::string> launcher_names();
// The launcher whose environment this process was started in, or empty (a plain command).
std::string detect_launcher();

// How a local rank pool starts its workers.
struct PoolLaunch {
  std::string name;  // "direct", "mpirun"
  std::string description;
  bool through_mpirun = false;  // mpirun starts the workers (in a build with Open MPI)
};

const std::vector<PoolLaunch>& pool_launches();
// The pool launch of that name; throws ConfigError naming the known ones.
const PoolLaunch& find_pool_launch(const std::string& name);
// The pool launch a pool gets when nothing asks for another: direct.
const PoolLaunch& direct_pool_launch();

}  // namespace distmetrics::runtime
