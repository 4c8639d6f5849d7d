// Jobs on ranks started by mpirun or by a torchrun-style launcher: every rank runs the task
// where its backend's descriptor says (Backend::peer_isolation: in a child per job on gloo,
// in its MPI agent on mpi, else itself), rank 0 gathers the outcomes through the store and
// publishes the report. The parts: the launch environment (peer_env.h), the store and the
// check-in (peer_store.h), the MPI agent (mpi_agent.h), the task and its child (peer_task.h).
#include "distmetrics/runtime/peer_runner.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "../comm/backend_factory.h"
#include "../blame/diagnosis.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/errors.h"
#include "mpi_agent.h"
#include "peer_env.h"
#include "peer_gather.h"
#include "peer_store.h"
#include "peer_task.h"
#include "peer_teardown.h"
#include "process.h"
#include "protocol.h"
#include "task_runner.h"

namespace distmetrics::runtime {

using namespace std::chrono_literals;

class PeerRunner::Impl {
 public:
  explicit Impl(PeerOptions options) : options_(std::move(options)) {
    const auto env = detail::process_environment();
    const Launcher* launcher = find_launcher(options_.launcher);
    if (!launcher || !launcher->peers) {
      std::vector<std::string> peers;
      for (const auto& l : launchers())
        if (l.peers) peers.push_back(l.name);
      throw ConfigError("peer runner: launcher must be one of " + quoted_list(peers) + ", got \"" + options_.launcher + "\"");
    }
    if (launcher->through_mpi) {
      if (!detail::mpi_runtime::compiled()) throw ConfigError(launcher_error_prefix(launcher->id) + "this build has no Open MPI");
      const std::uint64_t memory = options_.rank_memory_bytes;
      agent_ = std::make_unique<detail::MpiAgent>([memory](int fd) { detail::serve_mpi_agent(fd, memory); },
                                                  Deadline::after(options_.connect_deadline));
      const auto& hello = agent_->hello();
      launch_ = detail::read_mpi_launch(env, hello.at("rank").get<int>(), hello.at("size").get<int>(),
                                        hello.at("on_node").get<int>());
    } else {
      launch_ = detail::read_env_launch(env, detail::this_host_name());
    }
    rank_ = launch_.rank;
    world_size_ = launch_.world_size;
    // Tasks run in child processes of this rank (TaskChild): whatever they fork comes back to
    // this process to be reaped when they die.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    detail::Broadcast broadcast = [this](const std::string& text, const Deadline& deadline) {
      return agent_->broadcast(text, deadline);
    };
    // On failure the agent goes with agent_: no MPI agent outlives a runner that did not start.
    rendezvous_ = std::make_unique<detail::PeerRendezvous>(launch_, agent_ ? broadcast : detail::Broadcast(),
                                                           options_.connect_deadline, options_.report_grace);
    // The launcher's SIGTERM (its teardown after a lost host, which can come within 20 ms of the
    // loss) is held by rank 0 from now until finish(), so that the verdict is written before
    // the rank goes (peer_teardown.h): a run in progress, or the next one, stops and reports.
    if (rank_ == 0) {
      detail::install_teardown_handler();
      detail::hold_teardown(true);
    }
  }

  ~Impl() { leave(); }

  JobResult run(const Job& job) {
    if (stopped_) {
      throw ConfigError("the peer run stopped after " + stop_reason_ +
                        ": its process group is broken; start the launcher again to run more jobs");
    }
    if (const Backend* backend = find_backend(job.backend);
        backend != nullptr && std::find(backend->peer_launchers.begin(), backend->peer_launchers.end(),
                                        options_.launcher) == backend->peer_launchers.end()) {
      std::string under;
      for (const auto& name : backend->peer_launchers)
        under += (under.empty() ? "launcher " : " or launcher ") + name + " (" + find_launcher(name)->help + ")";
      throw ConfigError("job " + job.id + ": the " + backend->name + " backend needs its ranks started by " + under +
                        ", not launcher " + options_.launcher);
    }
    if (auto why = backend_unavailable(job.backend, job.comm_device, launch_.local_world_size)) {
      throw ConfigError("job " + job.id + ": " + why->text);
    }
    load_for_task_children(job);
    const auto started = std::chrono::steady_clock::now();
    const Deadline deadline = Deadline::after(job.deadline);
    // From the job's start: a verdict comes within its deadline plus the grace, however
    // late this rank's own task ended (which is by the deadline plus a moment).
    const Deadline report_deadline = Deadline::after(job.deadline + options_.report_grace);
    // A rank that timed out in a collective at the deadline says so within moments.
    const Deadline task_deadline = Deadline::after(job.deadline + moment());
    const std::string prefix = "v" + std::to_string(++variant_count_) + "/";
    auto store = c10::make_intrusive<c10d::PrefixStore>(prefix, rendezvous_->store());

    detail::CommSpec spec;
    spec.backend = job.backend;
    spec.comm_device = job.comm_device;
    spec.rank = rank_;
    spec.world_size = world_size_;
    spec.local_rank = launch_.local_rank;
    spec.op_timeout = detail::op_timeout_of(job);
    spec.gloo_address = rendezvous_->gloo_address();
    // Where the task runs is the backend's (backends.cpp, peer_isolation): in a child process of
    // the rank forked per job (a child can crash, exit, stop or loop without taking the rank
    // with it: the rank reports how it ended, ends its process group with whatever it forked and
    // goes on to the report); in the MPI agent under mpirun (MPI cannot be used in a child forked
    // after MPI_Init); or in the rank itself (CUDA does not survive a fork).
    const TaskIsolation isolation = peer_task_isolation(job.backend, job.comm_device);
    const bool in_agent = isolation == TaskIsolation::MpiAgent && agent_ != nullptr;
    // A task in a child or the agent is waited for with an eye on the others: rank 0 stops
    // waiting once a rank is gone without its outcome (the verdict is known: a crash) or the
    // launcher is ending the job; the others once rank 0's report is out.
    const std::function<bool()> stop = rank_ == 0 ? std::function<bool()>([this, store] { return verdict_is_due(*store); })
                                                   : report_is_out(prefix, store);
    detail::LocalRun local;
    std::optional<detail::TaskChild> child;
    if (in_agent) {
      local.outcome = run_in_agent(job, spec, prefix, deadline, task_deadline, *store, stop);
    } else if (isolation == TaskIsolation::ForkedChild) {
      child.emplace(job, spec, prefix, rendezvous_->address(), deadline, options_.rank_memory_bytes);
      local.outcome = child->wait(task_deadline, *store, stop);
    } else {
      auto group_store = c10::make_intrusive<c10d::PrefixStore>("group/", store);
      local = detail::run_task_here(job, spec, group_store, deadline, detail::store_task_hooks(store, rank_));
    }
    detail::set_quietly(*store, "outcome/" + std::to_string(rank_), detail::to_json(local.outcome));

    JobResult run = rank_ == 0 ? gather(*store, job, local.outcome, report_deadline)
                                : await_report(*store, job, local.outcome, deadline);
    local.comm.reset();  // only now: peers may have been inside collectives until the report
    // A teardown the launcher started stops the run too: rank 0 reported what it knew.
    const bool torn_down = rank_ == 0 && detail::teardown_signal() != 0;
    const bool broken = run.status == RunStatus::Hang || run.status == RunStatus::Crash || torn_down;
    // After a hang or a crash the run stops: nobody waits for a child to leave on its own.
    if (child) child->release(broken ? 0ms : std::min<std::chrono::milliseconds>(options_.report_grace, 1s));
    if (agent_) agent_->release();
    if (broken) {
      stopped_ = true;
      stopped_in_agent_ = in_agent;
      stop_status_ = run.status;
      stop_reason_ = torn_down ? "the launcher's SIGTERM in job " + job.id
                               : std::string("a ") + to_string(run.status) + " in job " + job.id;
    }
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return run;
  }

  void finish(int exit_code) {
    if (rank_ == 0 && detail::teardown_signal() != 0) {
      // The launcher is ending the job (it sent SIGTERM while the verdict was made) and its
      // SIGKILL follows: the reports are written, so leave now, with the run's code, without
      // waiting for ranks that are being ended too.
      std::cout.flush();
      std::cerr.flush();
      std::fflush(nullptr);
      if (agent_) agent_->end();
      ::_exit(exit_code);
    }
    if (rank_ == 0) detail::hold_teardown(false);  // the reports are written: a SIGTERM now ends the rank
    if (agent_ && stopped_ && stopped_in_agent_) {
      std::cout.flush();
      std::cerr.flush();
      std::fflush(nullptr);
      rendezvous_->say_left();  // rank 0: every rank has its last report (bounded)
      if (rank_ == 0) {
        rendezvous_->stop_serving();  // the reports are written: nobody needs the store any more
      } else {
        // Rank 0 ends the job once its reports are written (mpirun then ends every process it
        // started); a rank 0 that is itself gone never does, so the wait is bounded.
        std::this_thread::sleep_for(std::max<std::chrono::milliseconds>(4 * options_.report_grace, 10s));
      }
      // The agent may be stuck in a collective, or looping in a task: it is ended, not asked.
      // This process exiting with the code makes mpirun end the job with it (a process it
      // started returned non-zero), as MPI_Abort would, with no MPI_Finalize to wait in.
      agent_->end();
      ::_exit(exit_code);
    }
    leave();
  }

  int world_size() const { return world_size_; }
  int rank() const { return rank_; }
  int local_rank() const { return launch_.local_rank; }
  bool stopped() const { return stopped_; }
  RunStatus stopped_by() const { return stopped_ ? stop_status_ : RunStatus::Completed; }

 private:
  // What the job's backend loads per process for the children it forks (gloo through Python
  // imports torch.distributed: seconds, longer on a loaded machine), loaded before its first job,
  // before that job's deadline starts, so that each child has it. Every rank reaches that job
  // (they run the same jobs in order) and waits there until every rank has loaded it (by the
  // connect deadline): a rank still importing would otherwise make its peers wait out the
  // variant's deadline. (Asking whether a backend can run loads nothing.)
  void load_for_task_children(const Job& job) {
    const Backend* backend = find_backend(job.backend);
    if (backend == nullptr || backend->load_for_forked_workers == nullptr ||
        peer_task_isolation(job.backend, job.comm_device) != TaskIsolation::ForkedChild || !loaded_.insert(job.backend).second)
      return;
    (void)backend->load_for_forked_workers();  // nullopt: each child loads it, and says why it cannot
    std::vector<std::string> keys;
    for (int r = 0; r < world_size_; ++r) keys.push_back("loaded/" + job.backend + "/" + std::to_string(r));
    auto& store = *rendezvous_->store();
    detail::set_quietly(store, keys[static_cast<std::size_t>(rank_)], true);
    // Past the deadline the job runs anyway: its own deadline reports a rank that is not there.
    (void)detail::wait_for_keys(store, keys, Deadline::after(options_.connect_deadline));
  }

  void leave() {
    if (left_) return;
    left_ = true;
    if (rank_ == 0) detail::hold_teardown(false);
    if (rendezvous_) {
      rendezvous_->say_left();
      rendezvous_->close();  // after every rank has left (above): stops serving, removes the folder
    }
    if (agent_) agent_->stop(options_.report_grace);
    if (rank_ == 0) detail::restore_teardown_handler();
  }

  // Rank 0, while its own task runs: whether the verdict cannot wait for it. A rank whose
  // connection to the store closed before it sent its outcome makes the run a crash whatever the
  // others say (the report is written now, before a launcher that lost that rank's host ends
  // this one); a SIGTERM from the launcher means this rank is being ended.
  bool verdict_is_due(c10d::Store& store) const {
    if (detail::teardown_signal() != 0) return true;
    for (int r : rendezvous_->gone_ranks()) {
      try {
        if (!store.check({"outcome/" + std::to_string(r)})) return true;
      } catch (const std::exception&) {
        return true;  // this rank's own store does not answer it: nothing more will come
      }
    }
    return false;
  }

  // The other ranks, while their own task runs: whether rank 0's report is out (then their own
  // outcome changes nothing: it was decided without it). Across hosts the heartbeat looks for it
  // (no traffic of its own); on one host the rank asks every kBeatPeriod.
  std::function<bool()> report_is_out(const std::string& prefix, const c10::intrusive_ptr<c10d::Store>& store) const {
    if (rendezvous_->watch_report(prefix)) return [this] { return rendezvous_->report_out(); };
    auto next = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
    return [store, next] {
      const auto now = std::chrono::steady_clock::now();
      if (now < *next) return false;
      *next = now + detail::kBeatPeriod;
      try {
        return store->check({"report"});
      } catch (const std::exception&) {
        return false;
      }
    };
  }

  // Runs an mpi-backend task in the agent; its outcome, or how the agent ended or stopped.
  RankOutcome run_in_agent(const Job& job, const detail::CommSpec& spec, const std::string& prefix,
                           const Deadline& deadline, const Deadline& until, c10d::Store& store,
                           const std::function<bool()>& stop) {
    detail::AgentTask task;
    task.job = job;
    task.prefix = prefix;
    task.budget = deadline.remaining();
    task.world_size = spec.world_size;
    task.local_rank = spec.local_rank;
    task.op_timeout = spec.op_timeout;
    task.gloo_address = spec.gloo_address;
    task.store = rendezvous_->address();
    const long pid = agent_->pid();
    const std::optional<detail::TaskEnd> end = agent_->run(task, until, stop);
    if (!end) {
      RankOutcome gone;
      gone.rank = rank_;
      gone.pid = pid;
      gone.state = RankState::Crashed;
      gone.how_died = "the rank's MPI agent is gone";
      return gone;
    }
    return detail::outcome_of(*end, rank_, pid, store);
  }

  const std::vector<std::string>& hosts() const { return rendezvous_->hosts(); }

  // Rank 0 polls for the ranks' outcomes until decide_gather says to stop: `hearing` holds what it
  // heard of each rank.
  detail::GatherDecision await_outcomes(c10d::Store& store, const std::vector<std::string>& keys,
                                        std::vector<detail::RankHearing>& hearing, const Deadline& deadline) {
    const detail::GatherMargins margins = detail::gather_margins(options_.report_grace);
    std::optional<std::chrono::steady_clock::time_point> teardown_seen;  // the launcher's SIGTERM
    for (auto pause = 1ms;; pause = std::min<std::chrono::milliseconds>(pause * 2, 20ms)) {
      detail::Teardown teardown;
      teardown.requested = detail::teardown_signal() != 0;
      if (teardown.requested && !teardown_seen) teardown_seen = std::chrono::steady_clock::now();
      if (teardown_seen) {
        teardown.since = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - *teardown_seen);
      }
      const std::set<int> gone = rendezvous_->gone_ranks();
      const auto silence = rendezvous_->silent_for();
      for (int r = 0; r < world_size_; ++r) {
        detail::RankHearing& h = hearing[r];
        h.reported = r == 0 || h.reported || detail::get_json(store, keys[r]).has_value();
        h.gone = gone.count(r) > 0;
        const auto heard = silence.find(r);
        h.silent_for = heard == silence.end() ? std::nullopt : std::optional<std::chrono::milliseconds>(heard->second);
      }
      const auto past = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - deadline.at());
      const detail::GatherDecision decision = detail::decide_gather(hearing, past, margins, teardown);
      if (decision.done) return decision;
      std::this_thread::sleep_for(pause);
    }
  }

  // Rank 0: every rank's outcome, or, for a rank that sent none, what its progress says (stuck;
  // gone if its connection to the store closed, or its process is no longer there on this host).
  // When to stop waiting is decide_gather's (peer_gather.h): at once when a rank is gone without
  // its outcome, at the deadline unless a rank that has not reported is still heard (it is late,
  // not cut off), at the deadline plus the late margin whatever is missing.
  JobResult gather(c10d::Store& store, const Job& job, const RankOutcome& own, const Deadline& deadline) {
    std::vector<std::string> keys;
    for (int r = 0; r < world_size_; ++r) keys.push_back("outcome/" + std::to_string(r));
    std::vector<detail::RankHearing> hearing(world_size_);
    const detail::GatherDecision decision = await_outcomes(store, keys, hearing, deadline);
    JobResult run;
    std::vector<std::string> phases(world_size_);
    for (int r = 0; r < world_size_; ++r) {
      if (r == 0) {
        run.ranks.push_back(own);
        if (own.state == RankState::Stuck) {
          if (auto phase = detail::get_json(store, "phase/0")) phases[0] = phase->value("phase", "");
        }
        continue;
      }
      if (decision.ranks[r] == detail::Heard::Reported) {
        if (auto outcome = detail::get_json(store, keys[r])) {
          run.ranks.push_back(detail::outcome_from_json(*outcome));
          if (run.ranks.back().state == RankState::Stuck) {
            if (auto phase = detail::get_json(store, "phase/" + std::to_string(r))) phases[r] = phase->value("phase", "");
          }
          continue;
        }
      }
      RankOutcome missing;
      missing.rank = r;
      missing.state = RankState::Stuck;
      if (auto phase = detail::get_json(store, "phase/" + std::to_string(r))) {
        phases[r] = phase->value("phase", "");
        missing.pid = phase->value("pid", 0L);
        if (phase->value("host", "") == detail::this_host_name() && missing.pid > 0 &&
            detail::process_state(static_cast<pid_t>(missing.pid)) != detail::ProcessState::Running) {
          missing.state = RankState::Crashed;
          missing.how_died = "its process is gone (its launcher has the exit status)";
        }
      }
      if (decision.ranks[r] == detail::Heard::Gone && missing.state == RankState::Stuck) {
        missing.state = RankState::Crashed;
        missing.how_died = "its process is gone: its connection to the rendezvous store closed" +
                           (static_cast<size_t>(r) < hosts().size() ? " (host " + hosts()[r] + ")" : std::string());
      }
      detail::fill_progress(store, r, missing);
      run.ranks.push_back(std::move(missing));
    }
    detail::diagnose(run, phases, job.deadline);
    detail::blame_the_silent(run, decision, hearing, options_.report_grace);
    detail::say_who_was_late(run, decision, hearing, options_.report_grace);
    if (const int sig = detail::teardown_signal(); sig != 0 && !decision.loss) {
      std::vector<int> missing;
      for (int r = 0; r < world_size_; ++r) {
        if (decision.ranks[r] == detail::Heard::Late || decision.ranks[r] == detail::Heard::Silent) missing.push_back(r);
      }
      detail::prefix_diagnosis(run, "the launcher sent " + std::string(sig == SIGTERM ? "SIGTERM" : "a signal") +
                                        " (it is ending the job) " +
                                        (missing.empty() ? std::string("as the ranks reported")
                                                         : "before " + detail::describe_ranks(missing) + " reported") +
                                        "; what rank 0 knew then:\n");
    }
    name_hosts(run);
    detail::set_quietly(store, "report", run.to_json());
    return run;
  }

  // How long after the deadline a task that timed out in a collective still has to say so: half
  // the report grace (at most 500 ms), so that its outcome reaches rank 0 within the grace.
  std::chrono::milliseconds moment() const { return std::min<std::chrono::milliseconds>(options_.report_grace / 2, 500ms); }

  // Ranks on several hosts: the diagnosis says where the blamed rank is, and which ranks each host holds.
  void name_hosts(JobResult& run) const {
    if (hosts().size() != static_cast<size_t>(world_size_)) return;
    std::vector<std::string> order;
    std::map<std::string, std::vector<int>> ranks_of;
    for (int r = 0; r < world_size_; ++r) {
      if (!ranks_of.count(hosts()[r])) order.push_back(hosts()[r]);
      ranks_of[hosts()[r]].push_back(r);
    }
    if (order.size() < 2) return;
    std::string text;
    if (run.blamed_rank >= 0 && run.blamed_rank < world_size_) {
      text = "Rank " + std::to_string(run.blamed_rank) + " is on host " + hosts()[run.blamed_rank] + ". ";
    }
    text += "Hosts:";
    for (size_t h = 0; h < order.size(); ++h) {
      text += std::string(h ? ";" : "") + " " + order[h] + " rank" + (ranks_of[order[h]].size() > 1 ? "s " : " ");
      for (size_t i = 0; i < ranks_of[order[h]].size(); ++i) text += (i ? ", " : "") + std::to_string(ranks_of[order[h]][i]);
    }
    detail::add_diagnosis_line(run, text + ".");
  }

  // Ranks other than 0: rank 0's report, or (rank 0 silent) this rank's own view as a hang.
  JobResult await_report(c10d::Store& store, const Job& job, const RankOutcome& own, const Deadline& job_deadline) {
    // Rank 0 decides by the deadline plus the grace plus the late margin (peer_gather.h); one more
    // grace for its report to come.
    const auto wait = options_.report_grace + detail::gather_margins(options_.report_grace).late + options_.report_grace;
    const Deadline deadline = Deadline::after(job_deadline.remaining() + wait);
    if (detail::wait_for_keys(store, {"report"}, deadline)) {
      if (auto report = detail::get_json(store, "report")) return detail::job_result_from_json(*report);
    }
    JobResult run;
    for (int r = 0; r < world_size_; ++r) {
      RankOutcome outcome;
      outcome.rank = r;
      outcome.state = RankState::Stuck;
      run.ranks.push_back(r == rank_ ? own : outcome);
    }
    run.status = RunStatus::Hang;
    detail::blame_silent_rank0(run);
    run.diagnosis = "rank " + std::to_string(rank_) + " heard no report from rank 0 within " +
                    std::to_string((job.deadline + wait).count()) + " ms";
    return run;
  }

  PeerOptions options_;
  detail::PeerLaunch launch_;
  int rank_ = 0;
  int world_size_ = 1;
  std::unique_ptr<detail::MpiAgent> agent_;  // launcher mpi
  std::unique_ptr<detail::PeerRendezvous> rendezvous_;
  std::uint64_t variant_count_ = 0;
  bool stopped_ = false;
  bool stopped_in_agent_ = false;  // an mpi-backend task (run in the agent) hung or crashed
  RunStatus stop_status_ = RunStatus::Completed;
  std::string stop_reason_;
  bool left_ = false;
  std::set<std::string> loaded_;  // the backends whose load_for_forked_workers this rank has run
};

PeerRunner::PeerRunner(PeerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
PeerRunner::~PeerRunner() = default;
JobResult PeerRunner::run(const Job& job) { return impl_->run(job); }
int PeerRunner::world_size() const { return impl_->world_size(); }
int PeerRunner::rank() const { return impl_->rank(); }
int PeerRunner::local_rank() const { return impl_->local_rank(); }
bool PeerRunner::stopped() const { return impl_->stopped(); }
RunStatus PeerRunner::stopped_by() const { return impl_->stopped_by(); }
void PeerRunner::finish(int exit_code) { impl_->finish(exit_code); }

}  // namespace distmetrics::runtime
