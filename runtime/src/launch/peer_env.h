// What a peer launcher told this rank, read from its environment and checked before anything
// connects: mpirun (Open MPI's variables, the rank and size from MPI) or a torchrun-style
// launcher (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT). Every
// error is a ConfigError naming the launcher and the variable.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace distmetrics::runtime::detail {

// A variable's value, or nullopt when it is unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
// This process's environment.
EnvLookup process_environment();

struct PeerLaunch {
  std::string launcher;  // "mpi" or "env"
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  // The rendezvous. env: MASTER_ADDR and MASTER_PORT (1..65535). mpi: both, when both are set;
  // else "" and -1 (rank 0 then picks this host's address and a free port).
  std::string master_addr;
  int master_port = -1;
  // Every rank on this host (each launcher says it the same way on every rank, so that all
  // agree): the rendezvous is a private Unix-socket store and no port is opened.
  bool one_host = false;
  // The address gloo binds its pairs to: 127.0.0.1 when every rank is on this host, else ""
  // (GLOO_SOCKET_IFNAME's interface, or the address that reaches rank 0's store).
  std::string gloo_address;
  std::string run_secret;          // DISTMETRICS_RUN_SECRET; required by env across hosts
  std::string gloo_socket_ifname;  // GLOO_SOCKET_IFNAME
  std::string mpi_session_dir;     // OMPI_MCA_orte_jobfam_session_dir: mpirun removes it at the end
};

// The env launcher's variables. `this_host`: this host's name (MASTER_ADDR may name it).
PeerLaunch read_env_launch(const EnvLookup& env, const std::string& this_host);

// mpirun's: `rank`, `world_size` and `ranks_on_node` come from MPI (the rank's MPI agent), the
// local rank and size from OMPI_COMM_WORLD_LOCAL_RANK and OMPI_COMM_WORLD_LOCAL_SIZE.
PeerLaunch read_mpi_launch(const EnvLookup& env, int rank, int world_size, int ranks_on_node);

// This host's name (gethostname).
std::string this_host_name();
bool is_loopback(const std::string& host);

}  // namespace distmetrics::runtime::detail
