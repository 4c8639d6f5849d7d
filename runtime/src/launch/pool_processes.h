// The rank pool's processes (rank_pool.cpp): starts the workers (directly, each in its own
// process group, or through mpirun), knows which pids are ours, reaps them and ends them.
#pragma once

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
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "distmetrics/runtime/deadline.h"
#include "pool_timing.h"
#include "process.h"
#include "worker_args.h"
#include "zygote.h"

namespace distmetrics::runtime::detail {

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
  void spawn_direct(const std::vector<std::string>& command, const detail::WorkerArgs& args, bool fork_from_zygote) {
    for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) spawn_rank(r, command, args, fork_from_zygote);
  }

  // One rank's worker, directly (a new one, or the replacement of one ended alone).
  void spawn_rank(int r, const std::vector<std::string>& command, detail::WorkerArgs args, bool fork_from_zygote) {
    auto& rank = ranks_[r];
    rank = Rank{};
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

  // Whether rank `r` can be ended without the others: a direct launch, where the rank is the
  // process we started, leading its process group (what it forked is in that group).
  bool ends_alone(int r) const {
    const auto& rank = ranks_[r];
    return launcher_ <= 0 && rank.spawned > 0 && (rank.verified <= 0 || rank.verified == rank.spawned);
  }

  // Ends rank `r`'s process group in the background (reaped by `ending`), and forgets the rank:
  // spawn_rank() starts its replacement. Only where ends_alone(r).
  void end_rank_later(int r, detail::EndingGroups& ending, std::chrono::milliseconds grace) {
    ending.add({ranks_[r].spawned}, grace);
    ranks_[r] = Rank{};
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


}  // namespace distmetrics::runtime::detail
