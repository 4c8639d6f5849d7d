// The mpi backend: Open MPI called directly, CPU tensors. Every collective is non-blocking
// (MPI_I*) and polled with backoff until the deadline; a fresh MPI_Comm_dup per communicator.
#include <mpi.h>

#include <ATen/ATen.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "backend_factory.h"
#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime::detail {
namespace mpi_runtime {
namespace {
std::mutex init_mutex;
bool we_initialized = false;
// A collective abandoned at its deadline stays pending inside MPI; finalising would wait for it.
std::atomic<bool> abandoned_requests{false};
}  // namespace

bool compiled() { return true; }

bool initialized() {
  int flag = 0;
  MPI_Initialized(&flag);
  return flag != 0;
}

void ensure_initialized() {
  std::lock_guard<std::mutex> lock(init_mutex);
  if (initialized()) return;
  keep_shared_memory_in_session_dir();
  keep_one_node_off_the_network();
  int provided = 0;
  const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  if (rc != MPI_SUCCESS) throw ConfigError("mpi: MPI_Init_thread failed (was this process started by mpirun?)");
  // No atexit(MPI_Finalize): a rank that calls exit() inside a task must die (and mpirun notice),
  // not wait in MPI_Finalize for peers that are waiting for it. Owners finalise explicitly.
  we_initialized = true;
  // Errors come back as codes (and become CollectiveErrors naming the collective) instead of
  // aborting the whole job: OMPI reports some errors of non-blocking collectives here.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_FUNNELED) {
    throw ConfigError("mpi: this Open MPI gives thread level " + std::to_string(provided) +
                      ", distmetrics needs at least MPI_THREAD_FUNNELED");
  }
}

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

void finalize() {
  std::lock_guard<std::mutex> lock(init_mutex);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (we_initialized && !finalized && !abandoned_requests) MPI_Finalize();
}

void note_abandoned_request() { abandoned_requests = true; }

void abort_job(int exit_code) {
  if (!initialized()) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  MPI_Abort(MPI_COMM_WORLD, exit_code);
}

void keep_shared_memory_in_session_dir() {
  const char* session = std::getenv("OMPI_MCA_orte_jobfam_session_dir");
  if (session != nullptr && *session != '\0' && std::getenv("OMPI_MCA_btl_vader_backing_directory") == nullptr) {
    ::setenv("OMPI_MCA_btl_vader_backing_directory", session, 0);
  }
}

void keep_one_node_off_the_network() {
  const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (local_size != nullptr && size != nullptr && std::string(local_size) == size && std::getenv("OMPI_MCA_btl") == nullptr) {
    ::setenv("OMPI_MCA_btl", "^tcp,ofi", 0);
  }
}
}  // namespace mpi_runtime

namespace {

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string(what) + ": " + mpi_error_text(code));
}

// Polls the request until it completes or the deadline passes (then BackendTimeout; the
// request stays pending: MPI cannot cancel a collective).
void wait_for(MPI_Request& request, const Deadline& deadline, const char* what) {
  auto pause = std::chrono::microseconds(0);
  while (true) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    if (deadline.expired()) {
      mpi_runtime::note_abandoned_request();
      throw BackendTimeout(std::string(what) + " still pending at the deadline");
    }
    // Spin briefly (fast collectives), then back off so that oversubscribed ranks share the cores.
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
    else std::this_thread::yield();
    pause = std::min(std::max(pause * 2, std::chrono::microseconds(20)), std::chrono::microseconds(2000));
  }
}

int checked_count(std::int64_t n) {
  if (n > INT_MAX) throw std::runtime_error("mpi: buffer of " + std::to_string(n) + " elements is too large for one call");
  return static_cast<int>(n);
}

MPI_Op to_mpi(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return MPI_SUM;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Min: return MPI_MIN;
    case ReduceOp::Prod: return MPI_PROD;
  }
  return MPI_SUM;
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(const CommSpec& spec, MPI_Comm comm) : Communicator(spec.rank, spec.world_size, at::kCPU), comm_(comm) {}
  ~MpiCommunicator() override { MPI_Comm_free(&comm_); }
  std::string backend() const override { return "mpi"; }

 protected:
  void all_reduce_flat(at::Tensor& buffer, ReduceOp op, const Deadline& deadline) override {
    at::Tensor work_buffer = buffer;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_Op mpi_op = to_mpi(op);
    switch (buffer.scalar_type()) {
      case at::kDouble: type = MPI_DOUBLE; break;
      case at::kFloat: type = MPI_FLOAT; break;
      case at::kLong: type = MPI_INT64_T; break;
      case at::kInt: type = MPI_INT32_T; break;
      case at::kShort: type = MPI_INT16_T; break;
      case at::kChar: type = MPI_INT8_T; break;
      case at::kByte: type = MPI_UINT8_T; break;
      case at::kBool:  // as for torch bools: sum and max are "or", prod and min are "and"
        type = MPI_C_BOOL;
        mpi_op = (op == ReduceOp::Sum || op == ReduceOp::Max) ? MPI_LOR : MPI_LAND;
        break;
      case at::kHalf: case at::kBFloat16:  // MPI has no 16-bit floats: reduce in float32
        work_buffer = buffer.to(at::kFloat);
        type = MPI_FLOAT;
        break;
      default:
        throw std::runtime_error(std::string("mpi cannot all_reduce ") + c10::toString(buffer.scalar_type()));
    }
    MPI_Request request;
    check(MPI_Iallreduce(MPI_IN_PLACE, work_buffer.data_ptr(), checked_count(work_buffer.numel()), type, mpi_op,
                         comm_, &request),
          "MPI_Iallreduce");
    wait_for(request, deadline, "MPI_Iallreduce");
    if (!work_buffer.is_same(buffer)) buffer.copy_(work_buffer.to(buffer.scalar_type()));
  }

  void all_gather_flat(const at::Tensor& input, at::Tensor& output, const Deadline& deadline) override {
    const int bytes = checked_count(input.numel() * static_cast<std::int64_t>(input.element_size()));
    MPI_Request request;
    check(MPI_Iallgather(input.data_ptr(), bytes, MPI_BYTE, output.data_ptr(), bytes, MPI_BYTE, comm_, &request),
          "MPI_Iallgather");
    wait_for(request, deadline, "MPI_Iallgather");
  }

  void broadcast_flat(at::Tensor& buffer, int root, const Deadline& deadline) override {
    const int bytes = checked_count(buffer.numel() * static_cast<std::int64_t>(buffer.element_size()));
    MPI_Request request;
    check(MPI_Ibcast(buffer.data_ptr(), bytes, MPI_BYTE, root, comm_, &request), "MPI_Ibcast");
    wait_for(request, deadline, "MPI_Ibcast");
  }

  void barrier_flat(const Deadline& deadline) override {
    MPI_Request request;
    check(MPI_Ibarrier(comm_, &request), "MPI_Ibarrier");
    wait_for(request, deadline, "MPI_Ibarrier");
  }

 private:
  MPI_Comm comm_;
};

}  // namespace

namespace mpi_runtime {
std::string broadcast_text(const std::string& text, int root, const Deadline& deadline) {
  ensure_initialized();
  std::vector<char> buffer(1024, '\0');
  if (text.size() >= buffer.size()) throw ConfigError("mpi: broadcast_text takes at most 1023 bytes");
  std::copy(text.begin(), text.end(), buffer.begin());
  MPI_Request request;
  check(MPI_Ibcast(buffer.data(), static_cast<int>(buffer.size()), MPI_CHAR, root, MPI_COMM_WORLD, &request), "MPI_Ibcast");
  wait_for(request, deadline, "MPI_Ibcast");
  return std::string(buffer.data());
}

int ranks_on_this_node() {
  ensure_initialized();
  MPI_Comm node = MPI_COMM_NULL;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int size = 0;
  MPI_Comm_size(node, &size);
  MPI_Comm_free(&node);
  return size;
}
}  // namespace mpi_runtime

std::unique_ptr<Communicator> make_mpi_communicator(const CommSpec& spec, const Deadline& deadline) {
  mpi_runtime::ensure_initialized();
  const int world_rank = mpi_runtime::world_rank();
  const int world_size = mpi_runtime::world_size();
  if (world_rank != spec.rank || world_size != spec.world_size) {
    throw ConfigError("mpi: this process is rank " + std::to_string(world_rank) + " of " + std::to_string(world_size) +
                      " in MPI_COMM_WORLD, but was asked to be rank " + std::to_string(spec.rank) + " of " +
                      std::to_string(spec.world_size) + " (start it with mpirun -np " +
                      std::to_string(spec.world_size) + ")");
  }
  // A fresh communicator per job: messages of an earlier job can never match this one's.
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request request;
  check(MPI_Comm_idup(MPI_COMM_WORLD, &comm, &request), "MPI_Comm_idup");
  try {
    wait_for(request, deadline, "MPI_Comm_idup");
  } catch (const BackendTimeout&) {
    throw std::runtime_error("mpi: rank " + std::to_string(spec.rank) +
                             " timed out duplicating MPI_COMM_WORLD (a peer never started this job)");
  }
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return std::make_unique<MpiCommunicator>(spec, comm);
}

}  // namespace distmetrics::runtime::detail
