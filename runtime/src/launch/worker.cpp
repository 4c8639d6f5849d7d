// A rank worker: an exec'd copy of a test binary or of the CLI that serves its supervisor. It
// connects twice to the supervisor's private Unix socket (the control channel, then the store;
// the supervisor knows it by its kernel credentials), then runs jobs one at a time,
// each with a fresh communicator, streaming where it is (entered/left each collective) and
// returning the task's outcome. It never outlives its supervisor.
#include <ATen/Parallel.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/launchers.h"
#include "distmetrics/runtime/rank_pool.h"
#include "distmetrics/runtime/task.h"
#include "pool_store.h"
#include "distmetrics/runtime/text.h"
#include "dying_report.h"
#include "process.h"
#include "progress_flusher.h"
#include "protocol.h"
#include "task_runner.h"
#include "wire.h"
#include "worker_abort.h"
#include "worker_args.h"

namespace distmetrics::runtime {
namespace detail {
namespace {

using namespace std::chrono_literals;

constexpr auto kConnectBudget = 60s;
constexpr auto kSendBudget = 30s;
constexpr auto kProgressGrace = 2ms;  // how long a collective's progress messages may wait to go in a batch

// The worker's progress reporter (below), whose queued lines a dying rank writes first.
class ProgressReporter;
std::atomic<ProgressReporter*> live_reporter{nullptr};

// --- The worker ----------------------------------------------------------------------------------

// The static thread-local storage of every loaded object, which glibc carves out of a new
// thread's stack size: about 330 KiB in a rank with the CUDA torch 2.x wheel and numpy loaded
// (cuBLASLt alone 92 KiB), more than a fixed small stack; an upper bound (the objects' TLS
// blocks and their alignment).
std::size_t static_tls_bytes() {
  std::size_t total = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* sum) {
        for (int i = 0; i < info->dlpi_phnum; ++i)
          if (info->dlpi_phdr[i].p_type == PT_TLS)
            *static_cast<std::size_t*>(sum) += info->dlpi_phdr[i].p_memsz + info->dlpi_phdr[i].p_align;
        return 0;
      },
      &total);
  return total;
}

// Tells the supervisor where this rank is (entered / left each collective). The messages go in
// batches: a collective only appends its two lines to a queue (no write, no wake-up of the
// supervisor on the rank's path, which is what made a small compute() sync cost 1.5x a raw
// all_reduce), and a flusher thread writes the queue once its oldest line has waited
// kProgressGrace. So the supervisor's view of a rank is at most that stale: a rank that waits in
// a collective, or stops outside one, is known as such kProgressGrace later, which its verdicts
// (desync, stall, deadline) do not notice. A failed collective and every other message (phase,
// outcome) write the queue at once, ahead of themselves; a rank that dies (a fatal signal,
// exit()) writes it before its dying report (write_queued_progress), so its trace stays whole.
class ProgressReporter final : public CollectiveObserver {
 public:
  explicit ProgressReporter(LineChannel& channel) : channel_(channel) {
    // A small stack: the flusher only writes what is queued, and a rank under a tight memory
    // limit (--rank-memory) must not fail here, before its communicator can say what is short.
    // Without the thread (it could not start), every message is written at once, as before.
    // Small past the static TLS glibc takes from it: with a fixed 256 KiB a torch 2.x rank's
    // flusher had a few KiB left and died (SIGSEGV) in its first lazy symbol binding.
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    stack_bytes_ = 256 * 1024 + static_tls_bytes();
    pthread_attr_setstacksize(&attributes, stack_bytes_);
    has_flusher_ = pthread_create(&flusher_, &attributes, &ProgressReporter::run_flusher, this) == 0;
    pthread_attr_destroy(&attributes);
    live_reporter = this;
  }
  ~ProgressReporter() override {
    live_reporter = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (has_flusher_) pthread_join(flusher_, nullptr);
  }

  void on_enter(const CollectiveRecord& record) override {
    queue(record, "enter", nullptr);
    if (!has_flusher_) send_queued_then("");
  }
  void on_exit(const CollectiveRecord& record, bool ok) override {
    queue(record, "exit", ok ? "true" : "false");
    if (!ok || !has_flusher_) send_queued_then("");
  }
  void send(const nlohmann::json& message) {
    send_queued_then(message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  void flush() { send_queued_then(""); }
  // A task's record (post_task_record): queued behind the collectives before it, sent by the flusher.
  void queue_record(const nlohmann::json& record) {
    const std::string line = nlohmann::json{{"type", "record"}, {"record", record}}.dump(
                                 -1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::lock_guard<std::mutex> lock(mutex_);
    if (queued_.empty()) {
      oldest_ = std::chrono::steady_clock::now();
      wake_.notify_one();
    }
    queued_ += line;
    if (!has_flusher_) write_locked("");
  }

  // From a fatal-signal handler or exit(): the queued lines, unless another thread holds the
  // queue (then the flusher is writing them). No allocation.
  void write_queued_for_dying(int fd) {
    if (!mutex_.try_lock()) return;
    if (!queued_.empty()) {
      ssize_t ignored = ::send(fd, queued_.data(), queued_.size(), MSG_NOSIGNAL);
      (void)ignored;
      queued_.clear();
    }
    mutex_.unlock();
  }

 private:
  static void append_json_string(std::string& out, const std::string& text) {
    out += '"';
    for (char c : text) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        out += ' ';
      } else {
        out += c;
      }
    }
    out += '"';
  }

  // One line in the form detail::record_from_json reads (formatted here: no JSON object built).
  void queue(const CollectiveRecord& record, const char* type, const char* ok) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queued_.empty()) {
      oldest_ = std::chrono::steady_clock::now();
      wake_.notify_one();
    }
    queued_ += "{\"type\":\"";
    queued_ += type;
    queued_ += "\",\"record\":{\"seq\":";
    queued_ += std::to_string(record.seq);
    queued_ += ",\"op\":";
    append_json_string(queued_, record.op);
    queued_ += ",\"dtype\":";
    append_json_string(queued_, record.dtype);
    queued_ += ",\"shape\":[";
    for (std::size_t i = 0; i < record.shape.size(); ++i) {
      if (i > 0) queued_ += ',';
      queued_ += std::to_string(record.shape[i]);
    }
    queued_ += ']';
    if (record.step >= 0) queued_ += ",\"step\":" + std::to_string(record.step);
    if (record.compute >= 0) queued_ += ",\"compute\":" + std::to_string(record.compute);
    queued_ += '}';
    if (ok != nullptr) {
      queued_ += ",\"ok\":";
      queued_ += ok;
    }
    queued_ += "}\n";
  }

  // Writes the queue, then `line`, holding the queue's lock (so lines leave in order).
  void send_queued_then(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    write_locked(line);
  }

  void write_locked(const std::string& line) {
    queued_ += line;
    if (queued_.empty()) return;
    try {
      channel_.send_lines(queued_, Deadline::after(kSendBudget));
    } catch (const ChannelError&) {
      _exit(kWorkerExitSupervisorGone);  // nobody is left to report to
    }
    queued_.clear();
  }

  static void* run_flusher(void* self) {
    static_cast<ProgressReporter*>(self)->flush_loop();
    return nullptr;
  }

  void flush_loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      if (queued_.empty()) {
        wake_.wait(lock);
      } else if (std::chrono::steady_clock::now() < oldest_ + kProgressGrace) {
        wake_.wait_until(lock, oldest_ + kProgressGrace);
      } else {
        write_locked("");
      }
    }
  }

  LineChannel& channel_;
  std::mutex mutex_;  // guards queued_, oldest_, stop_, and the channel's writes
  std::condition_variable wake_;
  std::string queued_;  // whole lines, not yet written
  std::chrono::steady_clock::time_point oldest_;
  bool stop_ = false;
  pthread_t flusher_{};
  bool has_flusher_ = false;
  std::size_t stack_bytes_ = 0;

 public:
  bool flusher_running() const { return has_flusher_; }
  std::size_t flusher_stack_bytes() const { return stack_bytes_; }
};

}  // namespace

void write_queued_progress(int fd) {
  if (ProgressReporter* reporter = live_reporter.load()) reporter->write_queued_for_dying(fd);
}

namespace {

// This process's address space (VmSize), the quantity RLIMIT_AS bounds; 0 if unknown.
std::uint64_t mapped_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;  // "VmSize:  559744 kB"
  return 0;
}

class Worker {
 public:
  explicit Worker(WorkerArgs args) : args_(std::move(args)) {}

  int serve() {
    at::set_num_threads(1);  // ranks share the machine's cores with each other
    const std::uint64_t mapped_at_start = mapped_bytes();
    if (args_.memory_bytes > 0) {
      // Only this rank's allocations fail past the limit (reported as RankMemoryExceeded), not the machine.
      if (!limit_rank_memory(args_.memory_bytes, /*for_life=*/true)) throw ConfigError("worker: setrlimit(RLIMIT_AS) failed");
    }
    if (find_pool_launch(args_.launch).through_mpirun) {
      mpi_runtime::ensure_initialized();
      args_.rank = mpi_runtime::world_rank();
      if (mpi_runtime::world_size() != args_.world_size) {
        throw ConfigError("mpirun started " + std::to_string(mpi_runtime::world_size()) + " ranks, the pool expects " +
                          std::to_string(args_.world_size));
      }
      if (const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) local_rank_ = std::atoi(local);
    } else {
      local_rank_ = args_.rank;
    }
    if (args_.rank < 0) throw ConfigError("worker started without a rank");

    worker_rank = args_.rank;
    // The supervisor listens before it starts us: a socket refused or gone means it ended (or
    // gave up on this start), and this worker leaves instead of retrying until kConnectBudget.
    const Deadline connect_deadline = Deadline::after(kConnectBudget);
    channel_ = std::make_unique<LineChannel>(
        connect_to_unix_path(args_.socket_path, connect_deadline, AbsentListener::NoLonger));
    arm_dying_report(channel_->fd());
    channel_->send({{"type", "hello"}, {"role", "control"}, {"rank", args_.rank}}, Deadline::after(kSendBudget));
    auto store_channel = std::make_unique<LineChannel>(
        connect_to_unix_path(args_.socket_path, connect_deadline, AbsentListener::NoLonger));
    store_channel->send({{"type", "hello"}, {"role", "store"}, {"rank", args_.rank}}, Deadline::after(kSendBudget));
    store_ = c10::make_intrusive<PoolStoreClient>(std::move(store_channel));
    if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) throw ConfigError("worker: pipe2 failed");
    abort_fd_ = arm_abort_signal();
    std::thread watchdog;
    try {
      reporter_ = std::make_shared<ProgressReporter>(*channel_);  // one flusher thread for the worker's life
      watchdog = std::thread([this] { watch_supervisor(); });  // after reporter_, which it uses
      // A rank's collectives reach the supervisor before its store requests: seen blocked on the
      // store, a rank has told where it is (a deadlock is judged from both; pool_supervision.cpp).
      store_->set_before_request([reporter = reporter_.get()] { reporter->flush(); });
    } catch (const std::exception& e) {
      // Under a tight memory limit the first thread cannot get its stack: say which limit, and
      // what the process mapped before it (a worker forked from its supervisor's zygote has the
      // supervisor's mappings), rather than a bare "Resource temporarily unavailable".
      if (args_.memory_bytes == 0) throw;
      std::ostringstream text;
      text << std::fixed << std::setprecision(1) << "rank " << args_.rank << " could not start within its memory limit of "
           << static_cast<double>(args_.memory_bytes) / (1u << 30) << " GiB (it mapped "
           << static_cast<double>(mapped_at_start) / (1u << 30) << " GiB of address space before the limit was set; "
           << "raise it with --rank-memory): " << e.what();
      throw ConfigError(text.str());
    }

    int code = kWorkerExitOk;
    try {
      serve_variants();
    } catch (const ChannelError& e) {
      std::cerr << "distmetrics worker rank " << args_.rank << ": control channel: " << e.what() << std::endl;
      code = kWorkerExitSupervisorGone;
    } catch (const std::exception& e) {
      std::cerr << "distmetrics worker rank " << args_.rank << ": " << short_what(e) << std::endl;
      code = kWorkerExitBadStart;
    }
    disarm_dying_report();
    stop_ = true;
    const char wake = 1;
    if (::write(stop_pipe_[1], &wake, 1) != 1) { /* the watchdog then notices stop_ at the channel's close */ }
    watchdog.join();
    disarm_abort_signal();
    ::close(stop_pipe_[0]);
    ::close(stop_pipe_[1]);
    store_->set_before_request(nullptr);
    reporter_.reset();  // joins its flusher before the channel goes
    channel_.reset();
    store_.reset();
    if (mpi_runtime::initialized()) mpi_runtime::finalize();
    return code;
  }

 private:
  // Ends this process as soon as the supervisor's end of the channel closes (it died, or it
  // gave up on us), whatever the task is doing: a worker must never outlive its supervisor.
  // Ends the current job's collectives when the supervisor says the job hung
  // (kWorkerAbortSignal), and tells it once that is done ("aborted"): only then may it release
  // the job, so that no late shutdown can reach the next job's connections.
  void watch_supervisor() {
    pollfd fds[3] = {{channel_->fd(), POLLRDHUP, 0}, {stop_pipe_[0], POLLIN, 0}, {abort_fd_, POLLIN, 0}};
    while (!stop_) {
      if (::poll(fds, 3, -1) <= 0) continue;
      if (stop_ || (fds[1].revents & POLLIN)) return;
      if (fds[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) _exit(kWorkerExitSupervisorGone);
      if ((fds[2].revents & POLLIN) && take_abort_signals()) {
        const int shut = shut_down_tcp_connections();
        if (reporter_) reporter_->send({{"type", "aborted"}, {"connections", shut}});
      }
    }
  }

  void serve_variants() {
    const auto idle_budget = std::chrono::hours(24);
    while (true) {
      auto message = channel_->receive(Deadline::after(std::chrono::duration_cast<std::chrono::milliseconds>(idle_budget)));
      if (!message) throw ChannelError("no message from the supervisor for 24 hours");
      const std::string type = message->value("type", "");
      if (type == "shutdown") return;
      if (type != "job") throw ChannelError("unexpected control message '" + type + "'");
      run_variant(*message);
    }
  }

  void run_variant(const nlohmann::json& message) {
    const Job job = job_from_json(message.at("job"));
    const Deadline deadline = Deadline::after(job.deadline);
    CommSpec spec;
    spec.backend = job.backend;
    spec.comm_device = job.comm_device;
    spec.rank = args_.rank;
    spec.world_size = args_.world_size;
    spec.local_rank = local_rank_;
    spec.op_timeout = op_timeout_of(job);

    const std::shared_ptr<ProgressReporter>& reporter = reporter_;
    TaskHooks hooks;
    hooks.observer = reporter;
    hooks.on_phase = [&](const std::string& phase) { reporter->send({{"type", "phase"}, {"phase", phase}}); };
    LocalRun run;
    set_task_context("");
    handle_abort_signal();  // again: the last job's code may have put a handler of its own there
    try {
      c10::intrusive_ptr<c10d::Store> store;
      if (const Backend* backend = find_backend(job.backend); backend == nullptr || backend->uses_store) {
        store = c10::make_intrusive<c10d::PrefixStore>(message.at("store").at("prefix").get<std::string>(), store_);
      }
      run = run_task_here(job, spec, store, deadline, hooks);
    } catch (const std::exception& e) {  // the store could not be reached or did not answer
      run.outcome.rank = spec.rank;
      run.outcome.pid = static_cast<long>(::getpid());
      run.outcome.state = RankState::Raised;
      run.outcome.error_type = current_exception_type_name();
      run.outcome.error = "rank " + std::to_string(spec.rank) + ": cannot reach the supervisor's store: " + short_what(e);
    }
    reporter->send({{"type", "outcome"}, {"outcome", to_json(run.outcome)}});

    // Keep the process group until the supervisor has every rank's outcome and releases it.
    auto release = channel_->receive(Deadline::after(job.deadline + 60s));
    if (!release) throw ChannelError("the supervisor never released job " + job.id);
    const std::string type = release->value("type", "");
    run.comm.reset();
    if (type == "shutdown") throw ChannelError("shut down while holding job " + job.id);
    if (type != "release") throw ChannelError("expected 'release', got '" + type + "'");
  }

  WorkerArgs args_;
  int local_rank_ = 0;
  std::unique_ptr<LineChannel> channel_;
  std::shared_ptr<ProgressReporter> reporter_;  // after channel_: destroyed before it
  c10::intrusive_ptr<PoolStoreClient> store_;  // the supervisor's store, one connection for the worker's life
  std::atomic<bool> stop_{false};
  int stop_pipe_[2] = {-1, -1};  // wakes the watchdog when the worker leaves on its own
  int abort_fd_ = -1;  // the abort signal's handler wakes the watchdog through it (worker_abort.h)
};

}  // namespace

ProgressFlusher progress_flusher() {
  ProgressFlusher flusher;
  flusher.static_tls_bytes = static_tls_bytes();
  if (const ProgressReporter* reporter = live_reporter.load()) {
    flusher.running = reporter->flusher_running();
    flusher.stack_bytes = reporter->flusher_stack_bytes();
  }
  return flusher;
}

}  // namespace detail

namespace {
std::atomic<bool> serving_as_worker{false};
}  // namespace

bool this_process_is_a_rank_worker() { return serving_as_worker; }

void post_task_record(const nlohmann::json& record) {
  if (detail::ProgressReporter* reporter = detail::live_reporter.load()) reporter->queue_record(record);
}

void set_task_context(const std::string& what) {
  detail::task_context_length = 0;
  size_t n = 0;
  for (char c : what) {
    if (n + 1 >= sizeof(detail::task_context)) break;
    // Kept JSON-safe: the dying report embeds it in a string without escaping.
    detail::task_context[n++] = (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) ? '\'' : c;
  }
  detail::task_context_length = n;
}

std::optional<int> run_worker_if_requested(int argc, char** argv) {
  std::optional<detail::WorkerArgs> args;
  try {
    args = detail::parse_worker_flags(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "distmetrics worker: " << e.what() << std::endl;
    return detail::kWorkerExitBadStart;
  }
  if (!args) return std::nullopt;
  serving_as_worker = true;
  try {
    return detail::Worker(*args).serve();
  } catch (const std::exception& e) {
    std::cerr << "distmetrics worker (rank " << args->rank << "): " << detail::short_what(e) << std::endl;
    return detail::kWorkerExitBadStart;
  }
}

}  // namespace distmetrics::runtime
