// The supervisor side of the rank pool, in four parts with one job each:
//   RankProcesses   (pool_processes.h) starts the workers (directly, each in its own process
//                   group, or through mpirun), knows which pids are ours, reaps them and ends them;
//   Rendezvous      (pool_rendezvous.h) the pool's private folder and Unix socket: accepts only
//                   processes that RankProcesses started (kernel peer credentials), hosts the store;
//   WorkerLink      (worker_link.h) the request/answer protocol with one worker;
//   RankPool::Impl  (pool_supervisor.h; its reading of the workers' fates in pool_supervision.cpp)
//                   supervision: a job's deadline, what happened, ending and respawning.
// This file: how many ranks a local pool may start, and RankPool's face.
#include <unistd.h>

#include <algorithm>

#include "pool_supervisor.h"

namespace distmetrics::runtime {

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
int RankPool::hangs_ended_in_place() const { return impl_->hangs_ended_in_place(); }
int RankPool::ranks_replaced() const { return impl_->ranks_replaced(); }
long RankPool::launcher_pid() const { return impl_->launcher_pid(); }
std::string RankPool::private_dir() const { return impl_->private_dir(); }
int RankPool::rejected_connections() const { return impl_->rejected_connections(); }

}  // namespace distmetrics::runtime
