// The supervisor side of the rank pool, in four parts with one job each:
//   RankProcesses  starts the workers (directly, each in its own process group, or through
//                  mpirun), knows which pids are ours, reaps them and ends them;
//   Rendezvous     the pool's private folder and Unix socket: accepts only processes that
//                  RankProcesses started (kernel peer credentials) and hosts the store;
//   WorkerLink     the request/answer protocol with one worker;
//   RankPool::Impl supervision: a job's deadline, what happened, ending and respawning.
#include "distmetrics/runtime/rank_pool.h"
#include "distmetrics/runtime/launchers.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>

#include "../comm/backend_factory.h"
#include "diagnosis.h"
#include "distmetrics/build_config.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/phases.h"
#include "pool_store.h"
#include "process.h"
#include "protocol.h"
#include "wire.h"
#include "worker_args.h"
#include "zygote.h"

namespace distmetrics::runtime {

using namespace std::chrono_literals;

namespace {

// After the first sign of a hang or crash, how long to keep listening for the other ranks'
// reports (they make the diagnosis better) before ending the pool: the most a settle waits.
constexpr auto kSettle = 300ms;
// After two ranks were seen in one collective with contributions that do not match: a hang,
// unless the backend aborts first (gloo does on some: a crash, which says more), given this long.
// Over the peer run gloo's abort came within 10 ms of the mismatch being seen, under load
// (docs/performance.md, "A hang decided when it is certain"): this is 25 times that.
constexpr auto kMismatchSettle = 250ms;
// A hang's settle ends as soon as every rank's fate is known (fates_known) and no rank has been
// heard from for this long: what a rank sent just before arrives within it (its progress waits
// 2 ms to go in a batch, and is written before any store request).
constexpr auto kFatesQuiet = 10ms;
constexpr auto kSendBudget = 5s;
// How often the supervisor looks at its children's exit while waiting (a rank can die while a
// process it forked keeps its connection open).
constexpr auto kWatchInterval = 50ms;
constexpr size_t kLogTailBytes = 4096;

// --- Processes ------------------------------------------------------------------------------------

class RankProcesses {
 public:
  explicit RankProcesses(int world_size) : ranks_(static_cast<size_t>(world_size)) {
    // Whatever a worker or mpirun leaves behind (a process a metric forked, mpirun's ranks) is
    // re-parented to us, so that we can end and reap it.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
  }

  // fork_from_zygote: the command is this executable, so a worker may be forked from the zygote
  // (start_worker_zygote) instead of exec'd; exec'd as before when there is none.
  void spawn_direct(const std::vector<std::string>& command, detail::WorkerArgs args, bool fork_from_zygote) {
    for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) {
      auto& rank = ranks_[r];
      rank.log = std::make_unique<detail::OutputCapture>("distmetrics-rank-" + std::to_string(r));
      args.rank = r;
      detail::SpawnSpec spec;
      spec.argv = command;
      for (auto& flag : detail::worker_flags(args)) spec.argv.push_back(flag);
      spec.output_fd = rank.log->fd();
      spec.own_process_group = true;
      std::optional<pid_t> forked;
      if (fork_from_zygote) forked = detail::spawn_from_zygote(spec.argv, spec.output_fd);
      rank.spawned = forked ? *forked : detail::spawn_process(spec);
    }
  }

  void spawn_mpirun(const std::vector<std::string>& command, const detail::WorkerArgs& args, const std::string& private_dir) {
    launcher_log_ = std::make_unique<detail::OutputCapture>("distmetrics-mpirun");
    detail::SpawnSpec spec;
    spec.argv = {DISTMETRICS_MPIEXEC, "-np", std::to_string(ranks_.size()), "--oversubscribe",
                 "--bind-to", "none", "--tag-output"};
    for (auto& part : command) spec.argv.push_back(part);
    for (auto& flag : detail::worker_flags(args)) spec.argv.push_back(flag);
    if (geteuid() == 0) {
      spec.extra_env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
      spec.extra_env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
    }
    // Containers often forbid the cross-memory attach the shared-memory transport uses.
    spec.extra_env["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none";
    // Open MPI's session folder and shared-memory files go into the pool's private folder, which
    // is removed with the pool, whatever happened to mpirun (nothing left in /dev/shm or /tmp).
    spec.extra_env["OMPI_MCA_orte_tmpdir_base"] = private_dir;
    spec.extra_env["OMPI_MCA_btl_vader_backing_directory"] = private_dir;
    spec.extra_env["PMIX_SYSTEM_TMPDIR"] = private_dir;
    spec.extra_env["PMIX_SERVER_TMPDIR"] = private_dir;
    spec.output_fd = launcher_log_->fd();
    spec.own_process_group = true;
    // Everything runs on this host, but mpirun's out-of-band channel (ORTE's oob/tcp) listens on
    // 0.0.0.0 and [::] whatever oob_tcp_if_include says (Open MPI 4.1 binds INADDR_ANY): mpirun
    // gets a network namespace whose only interface is loopback, unless the user chose Open
    // MPI's interfaces. Its TCP then goes over loopback only (the if_include below).
    bool user_chose_interfaces = false;
    for (const char* name : {"OMPI_MCA_oob_tcp_if_include", "OMPI_MCA_oob_tcp_if_exclude", "OMPI_MCA_btl_tcp_if_include",
                             "OMPI_MCA_btl_tcp_if_exclude"})
      user_chose_interfaces = user_chose_interfaces || std::getenv(name) != nullptr;
    if (user_chose_interfaces) {
      launcher_ = detail::spawn_process(spec);
      return;
    }
    spec.extra_env["OMPI_MCA_oob_tcp_if_include"] = "lo";
    spec.extra_env["OMPI_MCA_btl_tcp_if_include"] = "lo";
    std::string refused;
    launcher_ = detail::spawn_process_on_own_loopback(spec, refused);
    if (!refused.empty()) {
      static std::once_flag said;
      std::call_once(said, [&] {
        std::cerr << "distmetrics: mpirun (the mpi backend's rank pool) listens on every network interface of this "
                     "host while it runs: it could not get a network namespace of its own ("
                  << refused << "), and Open MPI's out-of-band channel binds to all addresses (docs/runtime.md, "
                     "\"Peer launchers and the network\")\n";
      });
    }
  }

  // Whether the process the kernel names as a connection's peer may be rank `rank`'s worker:
  // the process we spawned for it (or one it exec'd into, or started), or under mpirun any
  // process mpirun started.
  bool may_be(pid_t pid, int rank) const {
    if (pid <= 0 || rank < 0 || rank >= static_cast<int>(ranks_.size())) return false;
    if (launcher_ > 0) return detail::descends_from(pid, launcher_);
    const pid_t spawned = ranks_[rank].spawned;
    return spawned > 0 && detail::descends_from(pid, spawned);
  }

  void adopt(int rank, pid_t verified) {
    ranks_[rank].verified = verified;
    // mpirun starts each rank as the leader of a process group of its own: ending that group
    // ends whatever the rank forked too.
    ranks_[rank].leads_group = launcher_ > 0 && detail::process_group_of(verified) == verified;
  }

  // The wait status of a rank we spawned once it has ended (reaping it); nullopt while it runs,
  // and always under mpirun (mpirun is the ranks' parent).
  std::optional<int> exited(int rank) {
    auto& r = ranks_[rank];
    if (!r.status && r.spawned > 0) {
      int status = 0;
      if (waitpid(r.spawned, &status, WNOHANG) == r.spawned) r.status = status;
    }
    return r.status;
  }

  // Waits (bounded) for the rank's process to end, for the report's "how it died".
  std::optional<int> await_exit(int rank, const Deadline& deadline) {
    auto& r = ranks_[rank];
    if (!r.status && r.spawned > 0) {
      if (auto status = detail::reap_child(r.spawned, deadline)) r.status = status;
    }
    return r.status;
  }

  std::optional<int> launcher_exited() {
    if (!launcher_status_ && launcher_ > 0) {
      int status = 0;
      if (waitpid(launcher_, &status, WNOHANG) == launcher_) launcher_status_ = status;
    }
    return launcher_status_;
  }

  bool running() {
    for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) {
      if (ranks_[r].spawned > 0 && exited(r)) return false;
    }
    return launcher_ <= 0 || !launcher_exited();
  }

  detail::OutputCapture* log(int rank) const { return ranks_[rank].log.get(); }
  detail::OutputCapture* launcher_log() const { return launcher_log_.get(); }
  pid_t launcher() const { return launcher_status_ ? 0 : launcher_; }
  bool under_mpirun() const { return launcher_ > 0; }

  std::vector<long> worker_pids() const {
    std::vector<long> pids;
    for (const auto& r : ranks_) pids.push_back(static_cast<long>(r.verified > 0 ? r.verified : r.spawned));
    return pids;
  }

  // Ends every process of the pool: each direct rank's whole process group, mpirun's group, and
  // under mpirun the ranks (each checked to be still ours: a pid that is not our descendant is
  // never signalled, it may belong to someone else by now). Reaps all of them.
  void end_all(std::chrono::milliseconds grace) {
    std::vector<pid_t> groups;
    for (const auto& r : ranks_) {
      if (r.spawned > 0) groups.push_back(r.spawned);
    }
    if (launcher_ > 0) groups.push_back(launcher_);
    // A group an mpirun rank led is ended only while some process of it is still ours (the
    // rank, or what it forked, re-parented to us): never a group whose number was reused.
    for (const auto& r : ranks_) {
      if (r.leads_group && detail::group_has_descendant_of(r.verified, ::getpid())) groups.push_back(r.verified);
    }
    std::map<pid_t, int> statuses;
    detail::end_process_groups(groups, grace, &statuses);
    for (auto& r : ranks_) {
      if (auto it = statuses.find(r.spawned); it != statuses.end() && !r.status) r.status = it->second;
    }
    std::vector<pid_t> strays;
    for (const auto& r : ranks_) {
      if (r.verified > 0 && r.verified != r.spawned && !r.leads_group && detail::descends_from(r.verified, ::getpid())) {
        strays.push_back(r.verified);
      }
    }
    detail::end_processes(strays, grace);  // reaps them: re-parented to us once mpirun is gone
    for (auto& r : ranks_) r = Rank{};
    launcher_ = 0;
    launcher_status_.reset();
    launcher_log_.reset();
  }

  // end_all without the wait, where that is the same (direct launch, each rank a process group of
  // its own and nothing of it elsewhere): the groups are signalled now and reaped by `ending`.
  void end_all_later(detail::EndingGroups& ending, std::chrono::milliseconds grace) {
    const bool apart = launcher_ <= 0 && std::all_of(ranks_.begin(), ranks_.end(), [](const Rank& r) {
      return r.verified <= 0 || r.verified == r.spawned;
    });
    if (!apart) {
      end_all(grace);
      return;
    }
    std::vector<pid_t> groups;
    for (const auto& r : ranks_) {
      if (r.spawned > 0) groups.push_back(r.spawned);
    }
    ending.add(groups, grace);
    for (auto& r : ranks_) r = Rank{};
  }

  // Lets the workers leave on their own (MPI wants MPI_Finalize), then ends what is left.
  void wind_down(const Deadline& deadline, std::chrono::milliseconds grace) {
    for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) {
      if (ranks_[r].spawned > 0) await_exit(r, deadline);
    }
    if (launcher_ > 0 && !launcher_status_) {
      if (auto status = detail::reap_child(launcher_, deadline)) launcher_status_ = status;
    }
    end_all(grace);
  }

  bool empty() const {
    return launcher_ <= 0 && std::all_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.spawned <= 0 && r.verified <= 0; });
  }

 private:
  struct Rank {
    pid_t spawned = 0;   // the process we started (direct launch); it leads its process group
    pid_t verified = 0;  // the process that connected for this rank, as the kernel said
    bool leads_group = false;  // under mpirun: the rank leads a process group of its own
    std::unique_ptr<detail::OutputCapture> log;  // direct launch only
    std::optional<int> status;
  };
  std::vector<Rank> ranks_;
  pid_t launcher_ = 0;  // mpirun
  std::optional<int> launcher_status_;
  std::unique_ptr<detail::OutputCapture> launcher_log_;
};

// --- Rendezvous -----------------------------------------------------------------------------------

// A connection that said hello, from a process the kernel vouches for.
struct Hello {
  std::string role;  // "control" or "store"
  int rank = -1;
  pid_t pid = 0;
  std::unique_ptr<detail::LineChannel> channel;
};

class Rendezvous {
 public:
  Rendezvous() {
    const char* tmp = std::getenv("TMPDIR");
    std::string base = tmp && *tmp ? tmp : "/tmp";
    std::string pattern = base + "/distmetrics-pool-XXXXXX";
    // A Unix socket's path holds at most 107 bytes (sockaddr_un): a deep TMPDIR (pytest's
    // per-test folders) falls back to /tmp, which the 0700 folder keeps as private.
    if ((pattern + "/pool.sock").size() >= sizeof(sockaddr_un{}.sun_path)) {
      base = "/tmp";
      pattern = base + "/distmetrics-pool-XXXXXX";
    }
    if (::mkdtemp(pattern.data()) == nullptr) {  // mkdtemp makes it 0700: ours alone
      throw ConfigError("cannot create the rank pool's private folder in " + base + ": " + std::strerror(errno) +
                        " (set TMPDIR to a writable folder)");
    }
    dir_ = pattern;
    try {
      listen_fd_ = detail::listen_on_unix_path(socket_path());
    } catch (...) {
      remove_dir();
      throw;
    }
  }

  ~Rendezvous() {
    stop_listening();
    remove_dir();
  }

  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  const std::string& dir() const { return dir_; }
  std::string socket_path() const { return dir_ + "/pool.sock"; }
  int listen_fd() const { return listen_fd_; }
  int rejected() const { return rejected_; }

  // Accepts new connections and reads their hellos. A connection whose peer is not of our uid,
  // or that `trusted(pid, rank)` does not vouch for, or that says anything else, is closed.
  template <typename Trusted>
  std::vector<Hello> accept_hellos(Trusted trusted) {
    while (true) {
      const int fd = detail::accept_connection(listen_fd_, Deadline::after(0ms));
      if (fd < 0) break;
      const detail::PeerCredentials peer = detail::peer_credentials(fd);
      if (peer.uid != ::geteuid() || peer.pid <= 0) {
        ::close(fd);
        ++rejected_;
        continue;
      }
      pending_.push_back({peer.pid, std::make_unique<detail::LineChannel>(fd)});
    }
    std::vector<Hello> hellos;
    for (size_t i = 0; i < pending_.size();) {
      auto& [pid, channel] = pending_[i];
      channel->read_available();
      std::optional<nlohmann::json> hello;
      bool bad = false;
      try {
        hello = channel->next();
      } catch (const detail::ChannelError&) {
        bad = true;
      }
      if (!bad && !hello && !channel->at_eof()) {
        ++i;
        continue;
      }
      const int rank = hello ? hello->value("rank", -1) : -1;
      const std::string role = hello ? hello->value("role", "") : "";
      if (bad || !hello || hello->value("type", "") != "hello" || (role != "control" && role != "store") ||
          !trusted(pid, rank)) {
        ++rejected_;
      } else {
        hellos.push_back({role, rank, pid, std::move(channel)});
      }
      pending_.erase(pending_.begin() + static_cast<long>(i));
    }
    return hellos;
  }

  std::vector<int> pending_fds() const {
    std::vector<int> fds;
    for (const auto& p : pending_) fds.push_back(p.second->fd());
    return fds;
  }

  // Once every rank is in: nobody else can connect (the socket file is gone, the port closed).
  void stop_listening() {
    if (listen_fd_ >= 0) {
      ::close(listen_fd_);
      listen_fd_ = -1;
      ::unlink(socket_path().c_str());
    }
    pending_.clear();
  }

  detail::PoolStoreServer store;

 private:
  void remove_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::string dir_;
  int listen_fd_ = -1;
  int rejected_ = 0;
  std::vector<std::pair<pid_t, std::unique_ptr<detail::LineChannel>>> pending_;
};

// --- The protocol with one worker ---------------------------------------------------------------

// One rank's worker and what the supervisor knows of it during the current job.
struct WorkerLink {
  int rank = 0;
  pid_t pid = 0;  // the connected process, as the kernel said (never as the worker said)
  std::unique_ptr<detail::LineChannel> channel;

  // The current job.
  std::optional<RankOutcome> outcome;
  std::vector<CollectiveRecord> entered;
  std::optional<CollectiveRecord> open;  // entered and not yet left
  std::string phase;
  std::string dying;  // how it said it died
  std::vector<nlohmann::json> records;  // what its task sent ahead of its end (post_task_record)
  bool lost = false;  // its channel closed (or its process ended) without an outcome
  std::optional<int> exit_status;
  bool store_blocked = false;  // its latest store request is a get or wait not yet answered
  // When it last moved on (entered or left a collective, changed phase, finished): after the
  // last move of every rank, a job that does not end is waiting on a hang (the "hang_wait" phase).
  std::chrono::steady_clock::time_point moved;

  void reset_variant() {
    outcome.reset();
    entered.clear();
    open.reset();
    phase.clear();
    dying.clear();
    records.clear();
    lost = false;
    exit_status.reset();
    store_blocked = false;
    moved = std::chrono::steady_clock::now();
  }

  bool answered() const { return outcome.has_value() || lost; }

  bool send(const nlohmann::json& message, std::chrono::milliseconds budget = kSendBudget) {
    try {
      channel->send(message, Deadline::after(budget));
      return true;
    } catch (const detail::ChannelError&) {
      lost = true;
      return false;
    }
  }

  // Reads every message the worker has sent so far.
  void drain() {
    if (lost) return;
    const bool still_open = channel->read_available();
    try {
      while (auto message = channel->next()) handle(*message);
    } catch (const std::exception&) {
      lost = true;  // a worker that talks nonsense is as good as dead
    }
    // A rank that said it is dying (a fatal signal, exit()) is lost even while a process it
    // forked keeps its connection open.
    if ((!still_open || !dying.empty()) && !outcome) lost = true;
  }

  void handle(const nlohmann::json& message) {
    const std::string type = message.value("type", "");
    if (type == "enter" || type == "exit" || type == "phase") moved = std::chrono::steady_clock::now();
    if (type == "enter") {
      open = detail::record_from_json(message.at("record"));
      entered.push_back(*open);
    } else if (type == "exit") {
      open.reset();
    } else if (type == "phase") {
      phase = message.value("phase", "");
    } else if (type == "outcome") {
      outcome = detail::outcome_from_json(message.at("outcome"));
      outcome->rank = rank;
      outcome->pid = static_cast<long>(pid);
      open.reset();
      if (outcome->state != RankState::TimedOut) moved = std::chrono::steady_clock::now();  // a timeout is no move
    } else if (type == "dying") {
      dying = message.value("how", "");
    } else if (type == "record") {
      records.push_back(message.at("record"));
    }
  }

  static nlohmann::json job_message(const Job& job, const std::string& store_prefix) {
    return {{"type", "job"}, {"job", detail::to_json(job)}, {"store", {{"prefix", store_prefix}}}};
  }
};

}  // namespace

// --- Supervision ---------------------------------------------------------------------------------

class RankPool::Impl {
 public:
  explicit Impl(PoolOptions options) : options_(std::move(options)) {
    if (options_.world_size < 1) throw ConfigError("rank pool: world_size must be at least 1");
    if (const int most = max_local_world_size(); options_.world_size > most) {
      throw ConfigError("rank pool: world size " + std::to_string(options_.world_size) +
                        " is more ranks than a local pool starts on this machine (at most " + std::to_string(most) +
                        ": " + std::to_string(kRanksPerCore) + " per core, one per " + std::to_string(kMiBPerRank) +
                        " MiB of memory, at most " + std::to_string(kMostLocalRanks) +
                        "); run a smaller world size, or start the ranks with mpirun or a torchrun-style launcher");
    }
    if (find_pool_launch(options_.launch).through_mpirun && !DISTMETRICS_HAVE_MPI) {
      throw ConfigError("rank pool: launch \"" + options_.launch + "\" needs a build with Open MPI");
    }
  }

  ~Impl() { shutdown(); }

  JobResult run(const Job& job) {
    validate(job);
    const auto started = std::chrono::steady_clock::now();
    ending_.poll();
    runtime::PhaseSeconds phases;  // the supervisor's (phases.h)
    if (alive() && !healthy()) end_workers();
    add_phase(phases, "end_workers", seconds_since(started));
    double start_seconds = 0;
    const bool starting = !alive();
    if (starting || backend_needs_warm_up(job.backend)) {
      // Workers forked from the zygote start with what the backend loads per process, where
      // the zygote can still be restarted from this one (the first pools of a program).
      auto mark = std::chrono::steady_clock::now();
      if (starting && !find_pool_launch(options_.launch).through_mpirun && options_.worker_command.empty())
        detail::load_into_worker_zygote(job.backend);
      add_phase(phases, "imports", seconds_since(mark));
      mark = std::chrono::steady_clock::now();
      const Deadline startup = Deadline::after(options_.startup_deadline);
      std::optional<JobResult> failure;
      if (starting) failure = start(startup);
      add_phase(phases, "pool_start", seconds_since(mark));
      mark = std::chrono::steady_clock::now();
      if (!failure) failure = warm_up_backend(job, startup);
      if (!failure && starting && options_.warm_up)
        failure = warm_up(*options_.warm_up, job, startup, "run once when the pool starts");
      add_phase(phases, "imports", seconds_since(mark));
      if (failure) {
        failure->seconds = seconds_since(started);
        failure->phases = std::move(phases);
        return *failure;
      }
      start_seconds = seconds_since(started);
    }
    JobResult result = supervise(job);
    result.seconds = seconds_since(started);
    result.start_seconds = start_seconds;
    for (const auto& [name, seconds] : phases) add_phase(result.phases, name, seconds);
    ending_.poll(started);  // an earlier job's workers are gone by now: reaped, or waited for
    return result;
  }

  int world_size() const { return options_.world_size; }
  int spawn_count() const { return spawn_count_; }
  long launcher_pid() const { return processes_ ? static_cast<long>(processes_->launcher()) : 0; }
  std::vector<long> worker_pids() const {
    std::vector<long> pids;
    for (const auto& w : workers_) pids.push_back(static_cast<long>(w.pid));
    return pids;
  }
  std::string private_dir() const { return rendezvous_ ? rendezvous_->dir() : std::string(); }
  int rejected_connections() const { return rejected_; }

 private:
  static double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }

  bool alive() const { return !workers_.empty(); }

  // Whether these workers have yet to run `backend`'s warm-up task (Backend::pool_warm_up_task).
  bool backend_needs_warm_up(const std::string& backend) const {
    const Backend* b = find_backend(backend);
    return b != nullptr && !b->pool_warm_up_task.empty() && warmed_backends_.count(backend) == 0;
  }

  // The backend's own warm-up (e.g. gloo through Python imports torch.distributed), once per
  // (re)start and backend, before PoolOptions::warm_up, by the same deadline.
  std::optional<JobResult> warm_up_backend(const Job& first, const Deadline& startup) {
    if (!backend_needs_warm_up(first.backend)) return std::nullopt;
    Job job;
    job.task = find_backend(first.backend)->pool_warm_up_task;
    auto failure = warm_up(job, first, startup, "the " + first.backend + " backend's, run once per pool start before its first " +
                                                    first.backend + " job");
    if (!failure) warmed_backends_.insert(first.backend);
    return failure;
  }

  // A warm-up job, on `first`'s backend and device, by the start's deadline. Returns the
  // failure (the pool is then down again) or nothing.
  std::optional<JobResult> warm_up(Job job, const Job& first, const Deadline& startup, const std::string& when) {
    job.id = "pool/warm-up (" + job.task + ")";
    job.backend = first.backend;
    job.comm_device = first.comm_device;
    job.deadline = std::max<std::chrono::milliseconds>(startup.remaining(), std::chrono::milliseconds(1));
    JobResult warmed = supervise(job);
    if (warmed.status == RunStatus::Completed) return std::nullopt;
    if (alive()) end_workers();
    warmed.diagnosis = "the rank pool's warm-up job (" + job.task + ", " + when + ") did not complete: " + warmed.diagnosis;
    return warmed;
  }

  void validate(const Job& job) const {
    if (job.task.empty()) throw ConfigError("job " + job.id + ": no task named");
    if (job.deadline.count() <= 0) throw ConfigError("job " + job.id + ": the deadline must be positive");
    if (const Backend* backend = find_backend(job.backend);
        backend != nullptr && backend->pool_launch != options_.launch && find_pool_launch(backend->pool_launch).through_mpirun) {
      throw ConfigError("job " + job.id + ": the " + backend->name + " backend needs a pool launched through " +
                        backend->pool_launch + " (PoolOptions::launch = \"" + backend->pool_launch + "\")");
    }
    if (auto reason = backend_unavailable_reason(job.backend, job.comm_device, options_.world_size)) {
      throw ConfigError("job " + job.id + ": " + *reason);
    }
  }

  // Workers may die between jobs (killed from outside): then the pool starts afresh.
  bool healthy() {
    for (auto& w : workers_) {
      if (!w.channel->read_available()) return false;
    }
    return processes_->running();
  }

  std::vector<std::string> worker_command() const {
    std::vector<std::string> command = options_.worker_command;
    if (command.empty()) command.push_back(detail::current_executable());
    return command;
  }

  // --- Starting ------------------------------------------------------------------------------

  // Starts the workers and waits until each has connected twice (control and store) from the
  // process we started for it. On failure, ends what was started and returns the failure as a
  // JobResult (status Crash), so that a caller's run of jobs goes on.
  std::optional<JobResult> start(const Deadline& deadline) {
    ++spawn_count_;
    warmed_backends_.clear();
    std::string failure;
    int failed_rank = -1;
    try {
      rendezvous_ = std::make_unique<Rendezvous>();
      processes_ = std::make_unique<RankProcesses>(options_.world_size);
      detail::WorkerArgs args;
      args.socket_path = rendezvous_->socket_path();
      args.world_size = options_.world_size;
      args.launch = options_.launch;
      args.memory_bytes = options_.rank_memory_bytes;
      if (!find_pool_launch(options_.launch).through_mpirun)
        processes_->spawn_direct(worker_command(), args, options_.worker_command.empty());
      else processes_->spawn_mpirun(worker_command(), args, rendezvous_->dir());
      await_hellos(deadline, failure, failed_rank);
    } catch (const std::exception& e) {
      failure = detail::short_what(e);
    }
    if (rendezvous_) {
      rejected_ += rendezvous_->rejected();
      rendezvous_->stop_listening();
    }
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
    // What the rank said last, usually why (its memory limit, a bad worker command).
    if (failed_rank >= 0) {
      std::string said = run.ranks[static_cast<std::size_t>(failed_rank)].log_tail;
      while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
      if (const auto newline = said.rfind('\n'); newline != std::string::npos) said = said.substr(newline + 1);
      if (!said.empty()) run.diagnosis += "; it said: " + said;
    }
    end_workers();
    return run;
  }

  void await_hellos(const Deadline& deadline, std::string& failure, int& failed_rank) {
    std::vector<std::optional<WorkerLink>> control(options_.world_size);
    std::vector<bool> store(options_.world_size, false);
    auto complete = [&]() {
      for (int r = 0; r < options_.world_size; ++r) {
        if (!control[r] || !store[r]) return false;
      }
      return true;
    };
    auto keep_what_came = [&]() {
      for (auto& w : control) {
        if (w) workers_.push_back(std::move(*w));
      }
    };
    while (!complete()) {
      for (int r = 0; r < options_.world_size; ++r) {
        if (auto status = processes_->exited(r)) {
          failed_rank = r;
          failure = "rank " + std::to_string(r) + " exited while starting (" + detail::describe_wait_status(*status) + ")";
          keep_what_came();
          return;
        }
      }
      if (auto status = processes_->launcher_exited()) {
        failure = "mpirun exited while starting the ranks (" + detail::describe_wait_status(*status) + ")";
        keep_what_came();
        return;
      }
      if (deadline.expired()) {
        std::vector<int> silent;
        for (int r = 0; r < options_.world_size; ++r) {
          if (!control[r] || !store[r]) silent.push_back(r);
        }
        failed_rank = silent.empty() ? -1 : silent.front();
        failure = detail::describe_ranks(silent) + " did not connect within " +
                  std::to_string(deadline.budget().count()) + " ms";
        keep_what_came();
        return;
      }
      std::vector<pollfd> fds{{rendezvous_->listen_fd(), POLLIN, 0}};
      for (int fd : rendezvous_->pending_fds()) fds.push_back({fd, POLLIN, 0});
      ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long>(deadline.remaining().count(), 100)));
      auto trusted = [&](pid_t pid, int rank) { return processes_->may_be(pid, rank); };
      for (auto& hello : rendezvous_->accept_hellos(trusted)) {
        const int r = hello.rank;
        if (hello.role == "control" && !control[r]) {
          WorkerLink link;
          link.rank = r;
          link.pid = hello.pid;
          link.channel = std::move(hello.channel);
          processes_->adopt(r, hello.pid);
          control[r] = std::move(link);
        } else if (hello.role == "store" && !store[r] && control[r] && control[r]->pid == hello.pid) {
          rendezvous_->store.add_client(r, std::move(hello.channel));
          store[r] = true;
        } else {
          ++rejected_;  // a second control or store connection for a rank, or a store before its control
        }
      }
    }
    for (auto& w : control) workers_.push_back(std::move(*w));
  }

  // --- Running one job ---------------------------------------------------------------------

  JobResult supervise(const Job& job) {
    const Deadline deadline = Deadline::after(job.deadline);
    const auto sent = std::chrono::steady_clock::now();
    send_job(job);
    const bool by_deadline = watch(deadline);
    const auto decided = std::chrono::steady_clock::now();

    JobResult run = collect(by_deadline);
    std::vector<std::string> phases;
    for (const auto& w : workers_) phases.push_back(w.phase);
    detail::diagnose(run, phases, job.deadline);

    const bool answered = std::all_of(workers_.begin(), workers_.end(), [](const WorkerLink& w) { return w.answered(); });
    // Every rank answered: all of it was the ranks' work. Else the verdict came after the ranks'
    // last move: the time since then was spent waiting on the hang (or the crash's settling).
    auto last_move = sent;
    for (const auto& w : workers_) last_move = std::max(last_move, w.moved);
    if (answered && !by_deadline) last_move = decided;
    add_phase(run.phases, "ranks", runtime::seconds_between(sent, last_move));
    add_phase(run.phases, "hang_wait", runtime::seconds_between(last_move, decided));
    if (run.status == RunStatus::Hang || run.status == RunStatus::Crash) {
      fill_log_tails(run);
      const auto ending = std::chrono::steady_clock::now();
      end_workers(/*later=*/true);
      add_phase(run.phases, "end_workers", seconds_since(ending));
    } else {
      if (run.status != RunStatus::Completed) fill_log_tails(run);
      release();
    }
    return run;
  }

  void send_job(const Job& job) {
    const std::string prefix = "v" + std::to_string(spawn_count_) + "." + std::to_string(++variant_count_) + "/";
    for (auto& w : workers_) {
      w.reset_variant();
      if (auto* log = processes_->log(w.rank)) log->clear();
    }
    if (auto* log = processes_->launcher_log()) log->clear();
    rendezvous_->store.clear();
    const nlohmann::json message = WorkerLink::job_message(job, prefix);
    for (auto& w : workers_) w.send(message, std::min<std::chrono::milliseconds>(kSendBudget, job.deadline));
  }

  // Watches until every rank has answered, or a crash or a hang is certain (and settled), or the
  // deadline. True when the deadline ended it. A hang's settle (a rank waits in a collective a
  // finished rank never issued, or every rank waits where none can go on) ends as soon as every
  // rank's fate is known: waiting longer would only wait for a backend's own timeout.
  bool watch(const Deadline& deadline) {
    std::optional<Deadline> settle;
    bool ends_when_known = false;
    while (true) {
      read_workers();
      if (std::all_of(workers_.begin(), workers_.end(), [](const WorkerLink& w) { return w.answered(); })) return false;
      if (nobody_left_to_write() && quiet()) fail_store_waits();
      if (!settle && (any_lost() || any_timed_out())) settle = Deadline::after(kSettle);
      if (!settle && (certain_hang() || deadlocked())) {
        settle = Deadline::after(kSettle);
        ends_when_known = true;
      }
      if (!settle && mismatched_collective()) settle = Deadline::after(kMismatchSettle);
      if (settle && (settle->expired() || (ends_when_known && fates_known() && quiet()))) return false;
      if (deadline.expired()) return true;
      const Deadline& wake = settle ? Deadline::earliest(*settle, deadline) : deadline;
      std::vector<pollfd> fds;
      for (auto& w : workers_) {
        if (!w.answered()) fds.push_back({w.channel->fd(), POLLIN, 0});
      }
      for (int fd : rendezvous_->store.fds()) fds.push_back({fd, POLLIN, 0});
      // Awake for the end of a quiet spell too, while a hang waits to be settled.
      const auto watch_interval = ends_when_known || any_store_blocked() ? kFatesQuiet : kWatchInterval;
      const long wait_ms = std::min<long>(wake.remaining().count(), watch_interval.count());
      ::poll(fds.data(), fds.size(), static_cast<int>(std::max(wait_ms, 1L)));
    }
  }

  // Everything the workers and the store clients sent so far, and which workers have died.
  void read_workers() {
    ending_.poll();  // an earlier job's workers that have ended since
    rendezvous_->store.serve();
    const std::set<int> blocked = rendezvous_->store.blocked();
    for (auto& w : workers_) {
      w.drain();
      w.store_blocked = !w.answered() && blocked.count(w.rank) > 0;
      if (!w.answered()) {
        if (auto status = processes_->exited(w.rank)) {  // dead, though a process it forked may hold its socket
          w.exit_status = status;
          w.drain();
          if (!w.outcome) w.lost = true;
        }
      }
    }
  }

  bool any_store_blocked() const {
    return std::any_of(workers_.begin(), workers_.end(), [](const WorkerLink& w) { return w.store_blocked && !w.open; });
  }

  // Ranks wait in collectives and on the store where none can go on (fates_known), nothing heard
  // for kFatesQuiet: a hang, whatever the backends' and the store's own timeouts would do later.
  bool deadlocked() const {
    const bool in_collective = std::any_of(workers_.begin(), workers_.end(), [](const WorkerLink& w) { return !w.answered() && w.open; });
    return in_collective && any_store_blocked() && fates_known() && quiet();
  }

  // Every rank still running is blocked on the store, every other one has answered: nobody is
  // left to write the keys they wait for.
  bool nobody_left_to_write() const {
    return std::all_of(workers_.begin(), workers_.end(),
                       [](const WorkerLink& w) { return w.answered() || (w.store_blocked && !w.open); });
  }

  // Ends those waits with an error, as their own timeout would later (a group that a rank makes
  // alone gives up, the rank goes on with its task): its outcome is then what it would have been,
  // without the wait.
  void fail_store_waits() {
    std::set<int> blocked;
    for (auto& w : workers_) {
      if (w.answered() || !w.store_blocked) continue;
      blocked.insert(w.rank);
      w.store_blocked = false;
    }
    rendezvous_->store.fail_blocked(blocked, "every other rank has finished, raised or died: no rank is left to write the "
                                             "keys it waits for");
  }

  // No rank moved, and none sent the store a request, for kFatesQuiet.
  bool quiet() const {
    auto last = std::chrono::steady_clock::time_point{};
    for (const auto& w : workers_) last = std::max(last, w.moved);
    for (const auto& [rank, heard] : rendezvous_->store.heard()) last = std::max(last, heard);
    return std::chrono::steady_clock::now() - last >= kFatesQuiet;
  }

  bool any_lost() const {
    return std::any_of(workers_.begin(), workers_.end(), [](const WorkerLink& w) { return w.lost; });
  }

  bool any_timed_out() const {
    return std::any_of(workers_.begin(), workers_.end(),
                       [](const WorkerLink& w) { return w.outcome && w.outcome->state == RankState::TimedOut; });
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

  // Whether every rank's fate is known, so that waiting longer can tell nothing more (but what a
  // backend's own timeout would): each rank answered, or waits in a collective #n that some other
  // rank can never enter (it finished or died after fewer, it waits on the store before #n, or it
  // is itself stuck in an earlier one), or waits on the store while every other rank is done or
  // stuck (no rank is left running to write the keys it waits for). A fixpoint over the ranks.
  bool fates_known() const {
    const std::size_t n = workers_.size();
    std::vector<bool> stuck(n, false);
    auto on_store = [](const WorkerLink& w) { return !w.answered() && !w.open && w.store_blocked; };
    auto reached = [](const WorkerLink& w) { return w.outcome ? w.outcome->trace.size() : w.entered.size(); };
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t i = 0; i < n; ++i) {
        const WorkerLink& w = workers_[i];
        if (stuck[i] || w.answered() || !w.open) continue;
        for (std::size_t j = 0; j < n && !stuck[i]; ++j) {
          const WorkerLink& q = workers_[j];
          if (j == i) continue;
          if (q.answered() || on_store(q)) stuck[i] = reached(q) <= w.open->seq;
          else if (stuck[j]) stuck[i] = q.open->seq < w.open->seq;
        }
        changed = changed || stuck[i];
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!on_store(workers_[i])) continue;
      stuck[i] = true;
      for (std::size_t j = 0; j < n; ++j)
        if (j != i && !workers_[j].answered() && !stuck[j] && !on_store(workers_[j])) stuck[i] = false;
    }
    for (std::size_t i = 0; i < n; ++i)
      if (!workers_[i].answered() && !stuck[i]) return false;
    return true;
  }

  // A rank waits inside collective #n, and another rank entered #n with another operation, dtype
  // or shape: they can never complete it together (PyTorch-Ignite's Precision on an empty rank
  // sends int64 [] where its peers send float64 [5]; gloo waits out its own timeout).
  bool mismatched_collective() const {
    for (const auto& waiting : workers_) {
      if (!waiting.open) continue;
      for (const auto& other : workers_) {
        if (&other == &waiting) continue;
        const auto& trace = other.outcome ? other.outcome->trace : other.entered;
        const auto same_seq = std::find_if(trace.rbegin(), trace.rend(),
                                           [&](const CollectiveRecord& r) { return r.seq == waiting.open->seq; });
        if (same_seq != trace.rend() && !detail::same_collective(*waiting.open, *same_seq)) return true;
      }
    }
    return false;
  }

  JobResult collect(bool by_deadline) {
    JobResult run;
    // Who crashed: ranks that said how they died; else (direct launch) the exit status of each
    // lost rank; ranks mpirun took down after a crash said nothing and count as ended.
    const bool someone_said = std::any_of(workers_.begin(), workers_.end(),
                                          [](const WorkerLink& w) { return w.lost && !w.dying.empty(); });
    const bool crash = any_lost();
    for (auto& w : workers_) {
      RankOutcome outcome;
      if (w.outcome) {
        outcome = *w.outcome;
        if (outcome.state != RankState::Finished) outcome.records = std::move(w.records);
      } else {
        outcome.records = std::move(w.records);
        outcome.rank = w.rank;
        outcome.pid = static_cast<long>(w.pid);
        outcome.trace = w.entered;
        outcome.blocked_in = w.open;
        outcome.blocked_on_store = w.store_blocked && !w.open;
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

  std::string how_died(WorkerLink& w) {
    if (!w.dying.empty()) return w.dying;
    if (!w.exit_status) w.exit_status = processes_->await_exit(w.rank, Deadline::after(500ms));
    if (w.exit_status && WIFEXITED(*w.exit_status) && WEXITSTATUS(*w.exit_status) == detail::kWorkerExitSupervisorGone)
      return detail::describe_wait_status(*w.exit_status) +
             " (its connection to the supervisor closed under it: did the task close descriptors it does not own?)";
    if (w.exit_status) return detail::describe_wait_status(*w.exit_status);
    if (processes_->under_mpirun()) {
      return "its connection closed without a word (ended by MPI or mpirun, or killed by SIGKILL: see its log tail)";
    }
    return "its connection closed without a word (killed by SIGKILL? out of memory?)";
  }

  void fill_log_tails(JobResult& run) {
    if (!processes_) return;
    const auto* launcher_log = processes_->launcher_log();
    const std::string launcher = launcher_log ? launcher_log->tail(64 * 1024) : std::string();
    for (auto& outcome : run.ranks) {
      if (launcher_log) {
        outcome.log_tail = detail::mpirun_rank_output(launcher, outcome.rank, true);
        if (outcome.log_tail.size() > kLogTailBytes) outcome.log_tail.erase(0, outcome.log_tail.size() - kLogTailBytes);
      } else if (auto* log = processes_->log(outcome.rank)) {
        outcome.log_tail = log->tail(kLogTailBytes);
      }
    }
  }

  void release() {
    for (auto& w : workers_) w.send({{"type", "release"}});
    if (any_lost()) end_workers();
  }

  // --- Ending --------------------------------------------------------------------------------

  // later: the workers are signalled and left to end (reaped by ending_): what they take to exit
  // is not the job's, and they are gone by the end of the next job (run) or of the pool.
  void end_workers(bool later = false) {
    workers_.clear();  // closing the channels tells the workers to go
    if (processes_ && later) processes_->end_all_later(ending_, options_.term_grace);
    else if (processes_) processes_->end_all(options_.term_grace);
    processes_.reset();
    rendezvous_.reset();
  }

  void shutdown() {
    if (!processes_) {
      rendezvous_.reset();
      ending_.poll(std::chrono::steady_clock::now());
      return;
    }
    for (auto& w : workers_) w.send({{"type", "shutdown"}}, 1s);
    // Let them leave on their own (MPI wants MPI_Finalize), then end whoever is left.
    processes_->wind_down(Deadline::after(5s), options_.term_grace);
    end_workers();
    ending_.poll(std::chrono::steady_clock::now());
  }

  PoolOptions options_;
  std::unique_ptr<RankProcesses> processes_;
  std::unique_ptr<Rendezvous> rendezvous_;
  std::vector<WorkerLink> workers_;
  detail::EndingGroups ending_;  // workers of earlier jobs that hung or crashed, signalled, not yet reaped
  int spawn_count_ = 0;
  int rejected_ = 0;
  std::uint64_t variant_count_ = 0;
  std::set<std::string> warmed_backends_;  // whose pool_warm_up_task these workers have run
};

int max_local_world_size() {
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const std::uint64_t machine = pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
  const long by_cores = kRanksPerCore * std::max(cores, 1L);
  const long by_memory = static_cast<long>(machine / (static_cast<std::uint64_t>(kMiBPerRank) << 20));
  return static_cast<int>(std::clamp(std::min(by_cores, by_memory), static_cast<long>(kFewestLocalRanks), static_cast<long>(kMostLocalRanks)));
}

std::uint64_t default_rank_memory_bytes() {
#if DISTMETRICS_HAVE_NCCL  // a CUDA build
  return 0;
#else
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const std::uint64_t machine = pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
  return std::max<std::uint64_t>(machine / 3, std::uint64_t{4} << 30);
#endif
}

RankPool::RankPool(PoolOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
RankPool::~RankPool() = default;
JobResult RankPool::run(const Job& job) { return impl_->run(job); }
int RankPool::world_size() const { return impl_->world_size(); }
std::vector<long> RankPool::worker_pids() const { return impl_->worker_pids(); }
int RankPool::spawn_count() const { return impl_->spawn_count(); }
long RankPool::launcher_pid() const { return impl_->launcher_pid(); }
std::string RankPool::private_dir() const { return impl_->private_dir(); }
int RankPool::rejected_connections() const { return impl_->rejected_connections(); }

}  // namespace distmetrics::runtime
