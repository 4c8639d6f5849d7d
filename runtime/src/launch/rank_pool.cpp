// The supervisor side of the rank pool: spawning workers (directly, or through mpirun), handing
// them variants, watching their progress, and ending them on a hang or a crash.
#include "distmetrics/runtime/rank_pool.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <thread>

#include "../comm/backend_factory.h"
#include "diagnosis.h"
#include "distmetrics/build_config.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/errors.h"
#include "process.h"
#include "protocol.h"
#include "wire.h"
#include "worker_args.h"

namespace distmetrics::runtime {

using namespace std::chrono_literals;


namespace {

// After the first sign of a hang or crash, how long to keep listening for the other ranks'
// reports (they make the diagnosis better) before ending the pool.
constexpr auto kSettle = 300ms;
constexpr auto kSendBudget = 5s;
constexpr size_t kLogTailBytes = 4096;

std::string random_token() {
  std::random_device device;
  std::ostringstream out;
  out << std::hex << device() << device() << device() << device();
  return out.str();
}

// One rank's worker and what the supervisor knows of it during the current variant.
struct Worker {
  int rank = 0;
  pid_t pid = 0;          // the worker process (from its hello)
  pid_t spawned_pid = 0;  // the process we started for it (direct launch), 0 under mpirun
  std::unique_ptr<detail::LineChannel> channel;
  std::unique_ptr<detail::OutputCapture> log;  // direct launch only

  // The current variant.
  std::optional<RankOutcome> outcome;
  std::vector<CollectiveRecord> entered;
  std::optional<CollectiveRecord> open;  // entered and not yet left
  std::string phase;
  std::string dying;  // how it said it died
  bool lost = false;  // its channel closed without an outcome

  void reset_variant() {
    outcome.reset();
    entered.clear();
    open.reset();
    phase.clear();
    dying.clear();
    lost = false;
  }
};

}  // namespace

class RankPool::Impl {
 public:
  explicit Impl(PoolOptions options) : options_(std::move(options)) {
    if (options_.world_size < 1) throw ConfigError("rank pool: world_size must be at least 1");
    if (options_.launch != "direct" && options_.launch != "mpirun") {
      throw ConfigError("rank pool: launch must be \"direct\" or \"mpirun\", got \"" + options_.launch + "\"");
    }
    if (options_.launch == "mpirun" && !DISTMETRICS_HAVE_MPI) {
      throw ConfigError("rank pool: launch \"mpirun\" needs a build with Open MPI");
    }
  }

  ~Impl() { shutdown(); }

  JobResult run(const Job& request) {
    validate(request);
    const auto started = std::chrono::steady_clock::now();
    JobResult result;
    if (alive() && !healthy()) end_workers();
    if (!alive()) {
      if (auto failure = start()) {
        failure->seconds = seconds_since(started);
        return *failure;
      }
    }
    result = supervise(request);
    result.seconds = seconds_since(started);
    return result;
  }

  int world_size() const { return options_.world_size; }
  int spawn_count() const { return spawn_count_; }
  long launcher_pid() const { return static_cast<long>(launcher_pid_); }
  std::vector<long> worker_pids() const {
    std::vector<long> pids;
    for (const auto& w : workers_) pids.push_back(static_cast<long>(w.pid));
    return pids;
  }

 private:
  static double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }

  bool alive() const { return !workers_.empty(); }

  void validate(const Job& request) const {
    if (request.task.empty()) throw ConfigError("variant " + request.id + ": no task named");
    if (request.deadline.count() <= 0) throw ConfigError("variant " + request.id + ": the deadline must be positive");
    if (request.backend == "mpi" && options_.launch != "mpirun") {
      throw ConfigError("variant " + request.id + ": the mpi backend needs a pool launched through mpirun "
                        "(PoolOptions::launch = \"mpirun\")");
    }
    if (auto reason = backend_unavailable_reason(request.backend, request.comm_device, options_.world_size)) {
      throw ConfigError("variant " + request.id + ": " + *reason);
    }
  }

  // Workers may die between variants (killed from outside): then the pool starts afresh.
  bool healthy() {
    for (auto& w : workers_) {
      if (!w.channel->read_available()) return false;
      if (w.spawned_pid > 0 && detail::process_state(w.spawned_pid) != detail::ProcessState::Running) return false;
    }
    return launcher_pid_ <= 0 || detail::process_state(launcher_pid_) == detail::ProcessState::Running;
  }

  // --- Starting ------------------------------------------------------------------------------------

  std::vector<std::string> worker_command() const {
    std::vector<std::string> command = options_.worker_command;
    if (command.empty()) command.push_back(detail::current_executable());
    return command;
  }

  // Starts the workers and waits for every hello. On failure, ends what was started and returns
  // the failure as a JobResult (status Crash), so that a caller's run of variants goes on.
  std::optional<JobResult> start() {
    ++spawn_count_;
    detail::Listener listener = detail::listen_on_loopback();
    std::string failure;
    int failed_rank = -1;
    try {
      c10d::TCPStoreOptions store_options;
      store_options.port = 0;
      store_options.isServer = true;
      store_options.waitWorkers = false;
      store_options.timeout = options_.startup_deadline;
      store_ = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", store_options);

      detail::WorkerArgs args;
      args.port = listener.port;
      args.token = token_ = random_token();
      args.world_size = options_.world_size;
      args.launch = options_.launch;
      std::map<int, std::pair<pid_t, std::unique_ptr<detail::OutputCapture>>> spawned;
      if (options_.launch == "direct") {
        for (int r = 0; r < options_.world_size; ++r) {
          auto log = std::make_unique<detail::OutputCapture>("distmetrics-rank-" + std::to_string(r));
          args.rank = r;
          detail::SpawnSpec spec;
          spec.argv = worker_command();
          for (auto& flag : detail::worker_flags(args)) spec.argv.push_back(flag);
          spec.output_fd = log->fd();
          const pid_t pid = detail::spawn_process(spec);
          spawned[r] = {pid, std::move(log)};
        }
      } else {
        spawn_mpirun(args);
      }
      accept_hellos(listener.fd, spawned, failure, failed_rank);
    } catch (const std::exception& e) {
      failure = detail::short_what(e);
    }
    ::close(listener.fd);  // no control port stays bound between startups
    if (failure.empty()) return std::nullopt;

    JobResult run;
    run.status = RunStatus::Crash;
    run.blamed_rank = failed_rank;
    for (int r = 0; r < options_.world_size; ++r) {
      RankOutcome outcome;
      outcome.rank = r;
      outcome.state = r == failed_rank ? RankState::Crashed : RankState::Ended;
      if (r == failed_rank) outcome.how_died = failure;
      run.ranks.push_back(outcome);
    }
    fill_log_tails(run);
    run.diagnosis = "the rank pool could not start: " + failure;
    end_workers();
    return run;
  }

  void spawn_mpirun(const detail::WorkerArgs& args) {
    // Workers are mpirun's children; once mpirun is gone they become ours (subreaper), so that
    // we can reap them and check that none is left.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    launcher_log_ = std::make_unique<detail::OutputCapture>("distmetrics-mpirun");
    detail::SpawnSpec spec;
    spec.argv = {DISTMETRICS_MPIEXEC, "-np", std::to_string(options_.world_size), "--oversubscribe",
                 "--bind-to", "none", "--tag-output"};
    for (auto& part : worker_command()) spec.argv.push_back(part);
    for (auto& flag : detail::worker_flags(args)) spec.argv.push_back(flag);
    if (geteuid() == 0) {
      spec.extra_env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
      spec.extra_env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
    }
    // Containers often forbid the cross-memory attach the shared-memory transport uses.
    spec.extra_env["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none";
    spec.output_fd = launcher_log_->fd();
    launcher_pid_ = detail::spawn_process(spec);
  }

  void accept_hellos(int listen_fd, std::map<int, std::pair<pid_t, std::unique_ptr<detail::OutputCapture>>>& spawned,
                     std::string& failure, int& failed_rank) {
    const Deadline deadline = Deadline::after(options_.startup_deadline);
    std::vector<std::unique_ptr<detail::LineChannel>> pending;
    std::vector<std::optional<Worker>> by_rank(options_.world_size);
    int greeted = 0;
    while (greeted < options_.world_size) {
      // Someone died while starting?
      for (auto& [rank, entry] : spawned) {
        int status = 0;
        if (entry.first > 0 && waitpid(entry.first, &status, WNOHANG) == entry.first) {
          entry.first = 0;
          failed_rank = rank;
          failure = "rank " + std::to_string(rank) + " exited while starting (" + detail::describe_wait_status(status) + ")";
          keep_started(by_rank, spawned);
          return;
        }
      }
      if (launcher_pid_ > 0) {
        int status = 0;
        if (waitpid(launcher_pid_, &status, WNOHANG) == launcher_pid_) {
          launcher_pid_ = 0;
          failure = "mpirun exited while starting the ranks (" + detail::describe_wait_status(status) + ")";
          keep_started(by_rank, spawned);
          return;
        }
      }
      if (deadline.expired()) {
        std::vector<int> silent;
        for (int r = 0; r < options_.world_size; ++r) {
          if (!by_rank[r]) silent.push_back(r);
        }
        failed_rank = silent.empty() ? -1 : silent.front();
        failure = detail::describe_ranks(silent) + " did not say hello within " +
                  std::to_string(options_.startup_deadline.count()) + " ms";
        keep_started(by_rank, spawned);
        return;
      }
      std::vector<pollfd> fds{{listen_fd, POLLIN, 0}};
      for (auto& c : pending) fds.push_back({c->fd(), POLLIN, 0});
      ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long>(deadline.remaining().count(), 100)));
      if (fds[0].revents & POLLIN) {
        const int fd = detail::accept_connection(listen_fd, Deadline::after(0ms));
        if (fd >= 0) pending.push_back(std::make_unique<detail::LineChannel>(fd));
      }
      for (size_t i = 0; i < pending.size();) {
        pending[i]->read_available();
        std::optional<nlohmann::json> hello;
        try {
          hello = pending[i]->next();
        } catch (const detail::ChannelError&) {
          pending.erase(pending.begin() + static_cast<long>(i));  // not one of ours
          continue;
        }
        if (!hello) {
          if (pending[i]->at_eof()) pending.erase(pending.begin() + static_cast<long>(i));
          else ++i;
          continue;
        }
        const int rank = hello->value("rank", -1);
        if (hello->value("type", "") != "hello" || hello->value("token", "") != token_ || rank < 0 ||
            rank >= options_.world_size || by_rank[rank]) {
          pending.erase(pending.begin() + static_cast<long>(i));
          continue;
        }
        Worker worker;
        worker.rank = rank;
        worker.pid = static_cast<pid_t>(hello->value("pid", 0L));
        worker.channel = std::move(pending[i]);
        pending.erase(pending.begin() + static_cast<long>(i));
        if (auto it = spawned.find(rank); it != spawned.end()) {
          worker.spawned_pid = it->second.first;
          worker.log = std::move(it->second.second);
          spawned.erase(it);
        }
        by_rank[rank] = std::move(worker);
        ++greeted;
      }
    }
    for (auto& w : by_rank) workers_.push_back(std::move(*w));
  }

  // After a failed start: everything started so far must still be ended and reaped, and the
  // logs of those that never said hello are kept for the report.
  void keep_started(std::vector<std::optional<Worker>>& by_rank,
                    std::map<int, std::pair<pid_t, std::unique_ptr<detail::OutputCapture>>>& spawned) {
    for (auto& w : by_rank) {
      if (w) workers_.push_back(std::move(*w));
    }
    for (auto& [rank, entry] : spawned) {
      Worker w;
      w.rank = rank;
      w.spawned_pid = entry.first;
      w.log = std::move(entry.second);
      unhelloed_.push_back(std::move(w));
    }
    spawned.clear();
  }

  // --- Running one variant -----------------------------------------------------------------------------

  JobResult supervise(const Job& request) {
    const Deadline deadline = Deadline::after(request.deadline);
    const std::string prefix = "v" + std::to_string(spawn_count_) + "." + std::to_string(++variant_count_) + "/";
    for (auto& w : workers_) {
      w.reset_variant();
      if (w.log) w.log->clear();
    }
    if (launcher_log_) launcher_log_->clear();

    nlohmann::json message = {{"type", "variant"},
                              {"request", detail::to_json(request)},
                              {"store", {{"host", "127.0.0.1"}, {"port", store_->getPort()}, {"prefix", prefix}}}};
    for (auto& w : workers_) {
      try {
        w.channel->send(message, Deadline::after(kSendBudget));
      } catch (const detail::ChannelError&) {
        w.lost = true;
      }
    }

    // Watch until every rank has answered, or a crash or a hang is certain, or the deadline.
    std::optional<Deadline> settle;
    bool by_deadline = false;
    while (true) {
      for (auto& w : workers_) drain(w);
      const bool all_answered = std::all_of(workers_.begin(), workers_.end(),
                                            [](const Worker& w) { return w.outcome || w.lost; });
      if (all_answered) break;
      if (!settle && (any_lost() || any_timed_out() || certain_hang())) settle = Deadline::after(kSettle);
      if (settle && settle->expired()) break;
      if (deadline.expired()) {
        by_deadline = true;
        break;
      }
      const Deadline& wake = settle ? Deadline::earliest(*settle, deadline) : deadline;
      std::vector<pollfd> fds;
      for (auto& w : workers_) {
        if (!w.lost && !w.outcome) fds.push_back({w.channel->fd(), POLLIN, 0});
      }
      ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long>(wake.remaining().count(), 1000)));
    }

    JobResult run = collect(by_deadline);
    std::vector<std::string> phases;
    for (const auto& w : workers_) phases.push_back(w.phase);
    detail::diagnose(run, phases, request.deadline);

    if (run.status == RunStatus::Hang || run.status == RunStatus::Crash) {
      fill_log_tails(run);
      end_workers();
    } else {
      if (run.status != RunStatus::Completed) fill_log_tails(run);
      release();
    }
    return run;
  }

  // Reads every message a worker has sent so far.
  void drain(Worker& w) {
    if (w.lost) return;
    const bool open = w.channel->read_available();
    try {
      while (auto message = w.channel->next()) handle(w, *message);
    } catch (const std::exception&) {
      w.lost = true;  // a worker that talks nonsense is as good as dead
    }
    if (!open && !w.outcome) w.lost = true;
  }

  void handle(Worker& w, const nlohmann::json& message) {
    const std::string type = message.value("type", "");
    if (type == "enter") {
      w.open = detail::record_from_json(message.at("record"));
      w.entered.push_back(*w.open);
    } else if (type == "exit") {
      w.open.reset();
    } else if (type == "phase") {
      w.phase = message.value("phase", "");
    } else if (type == "outcome") {
      w.outcome = detail::outcome_from_json(message.at("outcome"));
      w.outcome->pid = static_cast<long>(w.pid);
      w.open.reset();
    } else if (type == "dying") {
      w.dying = message.value("how", "");
    }
  }

  bool any_lost() const {
    return std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.lost; });
  }

  bool any_timed_out() const {
    return std::any_of(workers_.begin(), workers_.end(),
                       [](const Worker& w) { return w.outcome && w.outcome->state == RankState::TimedOut; });
  }

  // A rank whose task is over (n collectives issued) will never issue collective #n, so a rank
  // waiting inside #n (or later) can never finish it.
  bool certain_hang() const {
    for (const auto& done : workers_) {
      if (!done.outcome) continue;
      for (const auto& waiting : workers_) {
        if (waiting.open && waiting.open->seq >= done.outcome->trace.size()) return true;
      }
    }
    return false;
  }

  JobResult collect(bool by_deadline) {
    JobResult run;
    // Who crashed: ranks that said how they died; else (direct launch) the exit status of each
    // lost rank; ranks mpirun took down after a crash said nothing and count as ended.
    const bool someone_said = std::any_of(workers_.begin(), workers_.end(),
                                          [](const Worker& w) { return w.lost && !w.dying.empty(); });
    const bool crash = any_lost();
    for (auto& w : workers_) {
      RankOutcome outcome;
      if (w.outcome) {
        outcome = *w.outcome;
      } else {
        outcome.rank = w.rank;
        outcome.pid = static_cast<long>(w.pid);
        outcome.trace = w.entered;
        outcome.blocked_in = w.open;
        if (w.lost && (!someone_said || !w.dying.empty())) {
          outcome.state = RankState::Crashed;
          outcome.how_died = how_died(w);
        } else if (crash) {
          outcome.state = RankState::Ended;
        } else {
          // A hang: ranks still inside a collective (or, at the deadline, still running) are stuck;
          // the others were merely stopped with them.
          outcome.state = (by_deadline || w.open) ? RankState::Stuck : RankState::Ended;
        }
      }
      run.ranks.push_back(std::move(outcome));
    }
    return run;
  }

  std::string how_died(Worker& w) {
    if (!w.dying.empty()) return w.dying;
    if (w.spawned_pid > 0) {
      if (auto status = detail::reap_child(w.spawned_pid, Deadline::after(2s))) {
        if (w.pid == w.spawned_pid) w.pid = 0;  // reaped: its pid may be reused, never signal it again
        w.spawned_pid = 0;
        return detail::describe_wait_status(*status);
      }
    }
    if (launcher_pid_ > 0 || options_.launch == "mpirun") {
      return "its connection closed without a word (ended by MPI or mpirun, or killed by SIGKILL: see its log tail)";
    }
    return "its connection closed without a word (killed by SIGKILL? out of memory?)";
  }

  void fill_log_tails(JobResult& run) {
    const std::string launcher = launcher_log_ ? launcher_log_->tail(64 * 1024) : std::string();
    for (auto& outcome : run.ranks) {
      for (const auto& w : workers_) {
        if (w.rank == outcome.rank && w.log) outcome.log_tail = w.log->tail(kLogTailBytes);
      }
      for (const auto& w : unhelloed_) {
        if (w.rank == outcome.rank && w.log) outcome.log_tail = w.log->tail(kLogTailBytes);
      }
      if (launcher_log_) {
        outcome.log_tail = detail::mpirun_rank_output(launcher, outcome.rank, true);
        if (outcome.log_tail.size() > kLogTailBytes) outcome.log_tail.erase(0, outcome.log_tail.size() - kLogTailBytes);
      }
    }
  }

  void release() {
    for (auto& w : workers_) {
      try {
        w.channel->send({{"type", "release"}}, Deadline::after(kSendBudget));
      } catch (const detail::ChannelError&) {
        w.lost = true;
      }
    }
    if (any_lost()) end_workers();
  }

  // --- Ending ----------------------------------------------------------------------------------------

  std::vector<pid_t> all_pids() const {
    std::vector<pid_t> pids;
    for (const auto* group : {&workers_, &unhelloed_}) {
      for (const auto& w : *group) {
        if (w.pid > 0) pids.push_back(w.pid);
        if (w.spawned_pid > 0 && w.spawned_pid != w.pid) pids.push_back(w.spawned_pid);
      }
    }
    if (launcher_pid_ > 0) pids.push_back(launcher_pid_);
    return pids;
  }

  // TERM, then KILL, by pid; reaps them all (under mpirun too: we are their subreaper).
  void end_workers() {
    const std::vector<pid_t> pids = all_pids();
    detail::end_processes(pids, options_.term_grace);
    reap_orphans(pids);
    forget_workers();
  }

  void reap_orphans(const std::vector<pid_t>& pids) {
    // mpirun's children are re-parented to us once mpirun is gone; reap them so that none is
    // left as a zombie.
    const Deadline deadline = Deadline::after(2s);
    for (pid_t pid : pids) {
      while (detail::process_state(pid) == detail::ProcessState::Zombie && !deadline.expired()) {
        if (detail::reap_child(pid, Deadline::after(50ms))) break;
      }
    }
  }

  void forget_workers() {
    workers_.clear();
    unhelloed_.clear();
    launcher_pid_ = 0;
    launcher_log_.reset();
    store_.reset();
  }

  void shutdown() {
    if (!alive() && unhelloed_.empty() && launcher_pid_ <= 0) {
      store_.reset();
      return;
    }
    for (auto& w : workers_) {
      try {
        w.channel->send({{"type", "shutdown"}}, Deadline::after(1s));
      } catch (const std::exception&) {
      }
    }
    // Let them leave on their own (MPI wants MPI_Finalize), then end whoever is left. A pid we
    // reaped is never signalled again (it may belong to a new process by then).
    const Deadline deadline = Deadline::after(5s);
    std::vector<pid_t> left;
    for (pid_t pid : all_pids()) {
      if (detail::reap_child(pid, deadline)) continue;  // our child, and it exited
      while (detail::process_state(pid) == detail::ProcessState::Running && !deadline.expired()) {
        std::this_thread::sleep_for(10ms);
      }
      if (detail::process_state(pid) == detail::ProcessState::Running) left.push_back(pid);
    }
    detail::end_processes(left, options_.term_grace);
    reap_orphans(all_pids());
    forget_workers();
  }

  PoolOptions options_;
  std::vector<Worker> workers_;
  std::vector<Worker> unhelloed_;  // spawned, never connected (a failed start)
  pid_t launcher_pid_ = 0;         // mpirun
  std::unique_ptr<detail::OutputCapture> launcher_log_;
  c10::intrusive_ptr<c10d::TCPStore> store_;
  std::string token_;
  int spawn_count_ = 0;
  std::uint64_t variant_count_ = 0;
};

RankPool::RankPool(PoolOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
RankPool::~RankPool() = default;
JobResult RankPool::run(const Job& request) { return impl_->run(request); }
int RankPool::world_size() const { return impl_->world_size(); }
std::vector<long> RankPool::worker_pids() const { return impl_->worker_pids(); }
int RankPool::spawn_count() const { return impl_->spawn_count(); }
long RankPool::launcher_pid() const { return impl_->launcher_pid(); }

}  // namespace distmetrics::runtime
