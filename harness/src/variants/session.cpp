#include "distmetrics/harness/session.h"

#include <algorithm>
#include <numeric>

#include "distmetrics/harness/outcome.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/peer_runner.h"
#include "distmetrics/runtime/rank_pool.h"

namespace distmetrics::harness {

std::uint64_t rank_memory_bytes(std::optional<double> gib) {
  return gib ? static_cast<std::uint64_t>(*gib * double(1ull << 30)) : runtime::default_rank_memory_bytes();
}

std::unique_ptr<runtime::PeerRunner> start_peer_runner(const std::string& launcher, std::optional<double> rank_memory_gib) {
  runtime::PeerOptions options;
  options.launcher = launcher;
  options.rank_memory_bytes = rank_memory_bytes(rank_memory_gib);
  return std::make_unique<runtime::PeerRunner>(options);
}

int finish_peer_run(runtime::PeerRunner& peers, int code) {
  const bool reporter = peers.is_reporter();
  if (!reporter) {
    const runtime::RunStatus stopped_by = peers.stopped_by();
    code = stopped_by == runtime::RunStatus::Hang    ? kind_of(Outcome::Hang).exit_code
           : stopped_by == runtime::RunStatus::Crash ? kind_of(Outcome::Crash).exit_code
                                                     : 0;
  }
  // After a hang of a task that ran inside a rank, finish() ends the MPI job with this code
  // (MPI_Finalize would wait for the stuck rank).
  peers.finish(code);
  return reporter ? code : 0;
}

LocalPools::LocalPools(runtime::PoolOptions base, std::size_t max_pools)
    : base_(std::move(base)), max_pools_(std::max<std::size_t>(max_pools, 1)) {}

LocalPools::~LocalPools() { clear(); }

void LocalPools::clear() {
  while (!pools_.empty()) pools_.pop_back();  // ends the workers
}

LocalPools::Key LocalPools::key_for(const Variant& variant) {
  return {runtime::pool_launch_for(variant.backend), variant.world_size};
}

runtime::JobRunner& LocalPools::runner_for(const Variant& variant) {
  const Key key = key_for(variant);
  for (auto it = pools_.begin(); it != pools_.end(); ++it) {
    if (it->first != key) continue;
    if (std::next(it) != pools_.end()) std::rotate(it, std::next(it), pools_.end());  // most recent last
    return *pools_.back().second;
  }
  while (pools_.size() >= max_pools_) pools_.erase(pools_.begin());
  runtime::PoolOptions options = base_;
  options.world_size = variant.world_size;
  options.launch = key.first;
  pools_.emplace_back(key, std::make_unique<runtime::RankPool>(options));
  ++started_;
  return *pools_.back().second;
}

Session::Session(SessionOptions options) : engine_(std::move(options.engine)) {
  runtime::PoolOptions pool_options;
  pool_options.rank_memory_bytes = rank_memory_bytes(options.rank_memory_gib);
  pool_options.warm_up = options.pool_warm_up;
  pools_ = std::make_unique<LocalPools>(pool_options, options.max_pools);
}

Session::Session(SessionOptions options, runtime::PeerRunner& peers)
    : engine_(std::move(options.engine)), peers_(&peers) {}

Session::~Session() { close(); }

void Session::close() {
  if (pools_) pools_->clear();
}

bool Session::is_reporter() const { return !peers_ || peers_->is_reporter(); }

Verdict Session::run_item(const SessionItem& item) {
  const Scenario& scenario = *item.scenario;
  const Variant& variant = item.variant;
  Verdict verdict;
  auto not_run = [&](std::string reason) {
    verdict.variant = variant;
    verdict.outcome = Outcome::Error;
    verdict.reason = std::move(reason);
    return verdict;
  };
  if (variant.skip) return skip_verdict(variant);
  if (item.error) return not_run(*item.error);
  if (!peers_) {
    try {
      return engine_.run(scenario, variant, pools_->runner_for(variant));
    } catch (const std::exception& e) {  // the pool itself could not start
      return not_run(std::string("could not start the rank pool: ") + e.what());
    }
  }
  if (!stopped_at_.empty())
    return not_run("not run: the ranks' process group broke at " + stopped_at_ +
                   " (a hang or a crash); start the launcher again to run the rest");
  if (peers_->is_reporter()) {
    verdict = engine_.run(scenario, variant, *peers_);
  } else {
    try {
      peers_->run(engine_.job_for(scenario, variant));  // planned here, as rank 0 plans it to judge
    } catch (const std::exception&) {
      // Rank 0 reports it.
    }
  }
  if (peers_->stopped()) stopped_at_ = variant.id;
  return verdict;
}

Verdict Session::run(const SessionItem& item) { return run_item(item); }

std::vector<Verdict> Session::run(const std::vector<SessionItem>& items, const std::function<void(const Verdict&)>& progress) {
  std::vector<std::size_t> order(items.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (!peers_) {  // each pool starts once; a peer run has one pool, its ranks
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) {
      return LocalPools::key_for(items[a].variant) < LocalPools::key_for(items[b].variant);
    });
  }
  std::vector<Verdict> verdicts(items.size());
  for (std::size_t i : order) {
    verdicts[i] = run_item(items[i]);
    if (progress) progress(verdicts[i]);
  }
  return verdicts;
}

}  // namespace distmetrics::harness
