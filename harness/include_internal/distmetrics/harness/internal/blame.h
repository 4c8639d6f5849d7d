// Who is to blame when a variant's ranks did not finish together, in the harness's words: the
// decisions are the runtime's blame module's (distmetrics/runtime/blame.h: the run's status, the
// rank it blames, its paragraph, runtime::find_step_deviation), and this hands it what only the
// harness knows, as typed evidence: which rank left its script on an error while the others
// waited (PyTorch-Ignite #1242), how each rank's script ended (a wait that gave up inside a
// metric's own c10d call after a peer left), and, where the ranks split evenly over a step (or
// issued different collectives there, as many in each group), the sequence the same metric
// issues for that step elsewhere, from which the runtime tells which side deviated: the
// baselines (baselines_of_even_splits()), tried in order like the judging rules.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/internal/judging.h"
#include "distmetrics/runtime/job.h"

namespace distmetrics::harness::judging {

// The advice every "a rank raised alone" verdict gives.
extern const char* const kRaiseTogether;

// The collectives a scenario's metric issues in each script step, as seen in the variants of
// the scenario whose ranks all finished their scripts issuing the same: the baseline that tells
// which side of an even split deviated. Kept by the engine across the variants it judges.
class Baselines {
 public:
  // What one variant issued in one step: its collectives' keys (runtime::same_collective's rule:
  // op, dtype and shape, a gather's shape aside) and which variant it was.
  struct Seen {
    std::vector<std::string> keys;
    std::vector<runtime::CollectiveRecord> records;  // the same collectives, as the blame module reads them
    std::vector<std::string> described;  // "all_reduce(sum) (float64 [2])", for the diagnosis
    std::string variant;                 // its id
    int world_size = 0;
  };
  // Records every step of a judged variant whose ranks all ran their whole script issuing the
  // same collectives in each step (nothing otherwise).
  void record(const Judging& j);
  // What a recorded variant of `scenario` issued in (step, compute) (0-based; compute -1 outside
  // computes), for a variant of `world_size`: another of that world size first (other shards),
  // then the nearest other world size above 1, world size 1 last, and only where it issued a
  // collective (a metric may skip its sync there); nullptr when none was seen.
  const Seen* find(const Scenario& scenario, int step, int compute, int world_size) const;

 private:
  // By scenario (scenario_key: its metric, parameters, script, data, batches), then (step, compute).
  std::map<std::string, std::map<std::pair<int, int>, std::vector<Seen>>> seen_;
};

// The collective's key under runtime::same_collective's rule.
std::string collective_key(const runtime::CollectiveRecord& record);

// What a baseline says the metric issues in one script step, and the words that name it.
struct BaselineSeen {
  std::vector<runtime::CollectiveRecord> records;  // each collective (op, dtype, shape), in order
  std::vector<std::string> described;  // "all_reduce(sum) (float64 [2])", for the diagnosis
  std::string issued_in;  // "in <where it ran>, compute 1 (script step 2) issued": before the collectives
  std::string name;       // "that variant", "the single-process run": "<name> is the baseline"
};
// A baseline: what the same metric issues in (step, compute) (0-based; compute -1 outside
// computes) elsewhere than in the variant judged, or nullopt where it does not tell.
struct BaselineRule {
  const char* name;
  std::optional<BaselineSeen> (*find)(Judging& j, int step, int compute);
};
// The baselines that tell the sides of an even split apart, in the order they are tried (the first
// whose sequence matches exactly one side decides):
//   another variant of the scenario whose ranks agreed  (Baselines: they ran the script as this
//                                                        variant does, probes included)
//   the single-process run   the reference's collectives_at_compute (check.h), for a compute that
//                            is not a repeat; it may build the reference (Judging::reference())
const std::vector<BaselineRule>& baselines_of_even_splits();

// The blame for a run that hung or crashed.
struct StoppedRun {
  int blamed = -1;                     // the rank to blame, -1 for none
  std::string opening;                 // the harness's own paragraph before the runtime's, or empty
  std::optional<Deviation> deviation;  // a desync judged per script step
  // The runtime's diagnosis; where a baseline told an open blame apart, its reading once told
  // (runtime::JobResult::diagnosis_once_told: an even split is no longer "neither side is
  // blamed"; a tied mismatch no longer blames a rank for its place in the order).
  std::string runtime_diagnosis;
};
StoppedRun blame_stopped_run(Judging& j);

// A rank that raised (or finished its script) before a peer's wait gave up: the peer waited for
// it. Blames the earliest such rank; nullopt when no wait timed out or no other rank is to blame.
struct AbandonedWait {
  int blamed = -1;
  std::vector<int> waiting;  // ranks whose wait timed out
  std::string headline;      // one line
  std::string detail;        // every rank's error, in time order
};
std::optional<AbandonedWait> find_abandoned_wait(const std::vector<RankObservation>& ranks);

// "rank 2" or "ranks 0, 1 and 3".
std::string rank_list(const std::vector<int>& ranks);

}  // namespace distmetrics::harness::judging
