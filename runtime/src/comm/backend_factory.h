// Building a fresh communicator for one job (internal to the runtime: workers and peer
// runners call it; users get communicators through tasks and the rank-test fixture).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <exception>
#include <memory>
#include <string>

#include "distmetrics/runtime/comm.h"
#include "distmetrics/runtime/deadline.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::runtime::detail {

struct CommSpec {
  std::string backend;              // "gloo", "nccl", "mpi"
  std::string comm_device = "cpu";  // "cpu" or "cuda" (cuda:local_rank); nccl is always cuda
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::chrono::milliseconds op_timeout{std::chrono::seconds(60)};
  // The address this rank's gloo transport binds to. Empty: GLOO_SOCKET_IFNAME if set, else the
  // address of this host's name (for ranks on several hosts).
  std::string gloo_address = "127.0.0.1";
};

// `store` must be fresh for this communicator (a PrefixStore per job); mpi ignores it and
// duplicates MPI_COMM_WORLD instead. Connecting must finish by `deadline`.
std::unique_ptr<Communicator> make_communicator(const CommSpec& spec, const c10::intrusive_ptr<c10d::Store>& store,
                                                const Deadline& deadline);

std::unique_ptr<Communicator> make_gloo_communicator(const CommSpec& spec, const c10::intrusive_ptr<c10d::Store>& store,
                                                     const Deadline& deadline);
std::unique_ptr<Communicator> make_nccl_communicator(const CommSpec& spec, const c10::intrusive_ptr<c10d::Store>& store,
                                                     const Deadline& deadline);
std::unique_ptr<Communicator> make_mpi_communicator(const CommSpec& spec, const Deadline& deadline);

// The device collectives of this spec run on.
at::Device comm_device_of(const CommSpec& spec);

// Open MPI, initialised at most once per process (MPI cannot be initialised twice).
namespace mpi_runtime {
bool compiled();
// Initialises MPI (thread level SERIALIZED) unless done; throws ConfigError when it cannot.
void ensure_initialized();
bool initialized();
// MPI_COMM_WORLD's rank and size (after ensure_initialized()).
int world_rank();
int world_size();
// Finalises MPI if it was initialised and no collective was left pending by a timeout (a pending
// collective would make MPI_Finalize wait forever).
void finalize();
// Ends the whole MPI job with `exit_code` (MPI_Abort on MPI_COMM_WORLD; mpirun exits with it):
// the bounded teardown when a rank may be stuck where MPI_Finalize would wait for it. Returns
// only when MPI is not initialised.
void abort_job(int exit_code);
// Before MPI_Init under mpirun: Open MPI's shared-memory segments go into mpirun's session
// folder (removed when mpirun exits, whatever happened to the ranks) instead of /dev/shm.
void keep_shared_memory_in_session_dir();
// Before MPI_Init under mpirun with every rank on this node (OMPI_COMM_WORLD_LOCAL_SIZE ==
// OMPI_COMM_WORLD_SIZE): Open MPI's network transports are left out (OMPI_MCA_btl=^tcp,ofi unless
// OMPI_MCA_btl is set): tcp listens on every interface and libfabric's on the host's address,
// while shared memory (vader) carries every message on one node anyway.
void keep_one_node_off_the_network();
// Rank `root`'s text (up to 1023 bytes) reaches every rank of MPI_COMM_WORLD, by the deadline
// (BackendTimeout after it).
std::string broadcast_text(const std::string& text, int root, const Deadline& deadline);
// How many ranks of MPI_COMM_WORLD share this rank's node (MPI_Comm_split_type with
// MPI_COMM_TYPE_SHARED): the world size when every rank is on this host. A collective with no
// deadline of its own: call it right after MPI_Init, where mpirun has started every rank.
int ranks_on_this_node();
}  // namespace mpi_runtime

// The message of an exception without LibTorch's C++ backtrace (text.h; the short name the
// communicator and launch code use).
inline std::string short_what(const std::exception& e) { return error_message(e); }

}  // namespace distmetrics::runtime::detail
