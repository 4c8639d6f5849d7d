// A session: runs lists of variants and gives their verdicts, on rank pools of its own (the
// local launcher) or as one rank of a peer run (--launcher mpi|env). `run`, `serve` and
// `conform` are thin adapters over it; so is any command that runs lists of variants.
//
//   Session session({.engine = options, .rank_memory_gib = gib});   // local rank pools
//   std::vector<Verdict> verdicts = session.run(items, [&](const Verdict& v) { console.progress(v); });
//
// What it owns: the engine (with its data cache), the local pools, the order variants run in
// (grouped by the pool they need, so each pool starts once), and the rules for a variant that
// is not run: a skip, a verdict decided before the run, a pool that cannot start ("could not
// start the rank pool"), and, on peers, every variant after the ranks' process group broke.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/engine.h"
#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/variant.h"
#include "distmetrics/harness/verdict.h"
#include "distmetrics/runtime/job.h"
#include "distmetrics/runtime/rank_pool.h"

namespace distmetrics::runtime {
class PeerRunner;
}

namespace distmetrics::harness {

// One variant to run. `scenario` must outlive the run.
struct SessionItem {
  const Scenario* scenario = nullptr;
  Variant variant;
  // Decided before the run (conform: the metric's factory cannot build these parameters): the
  // variant is an error with this reason and is not run.
  std::optional<std::string> error;
};

struct SessionOptions {
  EngineOptions engine;                   // --deadline, conform's reference and extra checks
  std::optional<double> rank_memory_gib;  // --rank-memory (0: no limit); default: the runtime's
  // Local pools kept alive at once. 1 where the session orders the variants itself; `serve`
  // answers in its caller's order and keeps one per world size of a usual file.
  std::size_t max_pools = 1;
  // Run once by each local pool as it (re)starts, before its first variant (runtime::PoolOptions::
  // warm_up): `conform --python` imports its sources there, so no variant's deadline pays for it.
  std::optional<runtime::Job> pool_warm_up;
};

// --rank-memory's GiB in bytes (0: no limit); no value: runtime::default_rank_memory_bytes().
std::uint64_t rank_memory_bytes(std::optional<double> gib);

// The peer runner of --launcher mpi|env. Throws what is wrong with the launcher's environment.
std::unique_ptr<runtime::PeerRunner> start_peer_runner(const std::string& launcher, std::optional<double> rank_memory_gib);

// The exit code every rank of a peer run ends with: the reporter's `code`; on the other ranks,
// that of how the run stopped (the outcome table's code of a hang or a crash, else 0). Ends the
// peer run with it (PeerRunner::finish, which may not return) and returns what this process
// exits with: `code` on the reporter, 0 on the others.
int finish_peer_run(runtime::PeerRunner& peers, int code);

// Rank pools for local runs, reused across consecutive variants: one pool per (launch mode,
// world size), the mpi backend's through mpirun. At most `max_pools` stay alive (the least
// recently used one is ended first).
class LocalPools {
 public:
  explicit LocalPools(runtime::PoolOptions base = {}, std::size_t max_pools = 2);
  ~LocalPools();
  // The pool a variant needs: (its backend's pool launch, its world size).
  using Key = std::pair<std::string, int>;
  static Key key_for(const Variant& variant);
  runtime::JobRunner& runner_for(const Variant& variant);
  void clear();  // ends every pool
  int pools_started() const { return started_; }

 private:
  runtime::PoolOptions base_;
  std::size_t max_pools_;
  int started_ = 0;
  std::vector<std::pair<Key, std::unique_ptr<runtime::RankPool>>> pools_;  // most recent last
};

class Session {
 public:
  // Local: rank pools of its own, started as the variants need them.
  explicit Session(SessionOptions options);
  // One rank of a peer run: every rank runs the same variants in lockstep; the reporter (rank
  // 0) judges, the others only take part (their verdicts are empty but for skips and errors
  // decided before the run). `peers` must outlive the session; finish it with finish_peer_run.
  Session(SessionOptions options, runtime::PeerRunner& peers);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  bool is_reporter() const;  // true unless this is a peer rank other than 0

  // Runs every item and returns their verdicts in the items' order. Local: grouped by the pool
  // they need; peers: in order. `progress` gets each verdict as it is made (in run order).
  std::vector<Verdict> run(const std::vector<SessionItem>& items,
                           const std::function<void(const Verdict&)>& progress = {});
  // One variant (`serve`: in the caller's order, pools kept between calls).
  Verdict run(const SessionItem& item);

  // Ends the local pools (the destructor does too).
  void close();

 private:
  Verdict run_item(const SessionItem& item);
  Engine engine_;
  std::unique_ptr<LocalPools> pools_;      // local
  runtime::PeerRunner* peers_ = nullptr;  // peers
  std::string stopped_at_;                 // peers: the variant at which the process group broke
};

}  // namespace distmetrics::harness
