// `distmetrics explore`'s search space (docs/explore.md): random scenarios drawn around a base
// scenario, written back as scenario TOML (the one format; every case is loaded by the same
// loader as a file before it runs), the failure signature of a verdict, and the candidates that
// shrink a failing case. The engine that runs them is explorer.h.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/script.h"
#include "distmetrics/harness/shard.h"
#include "distmetrics/harness/verdict.h"

namespace distmetrics::harness::explore {

// Deterministic on every platform (std::uniform_*_distribution is not): splitmix64.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  std::int64_t between(std::int64_t low, std::int64_t high);  // inclusive
  bool chance(double p);
  double unit();  // [0, 1)
  template <class T>
  const T& pick(const std::vector<T>& items) {
    return items[static_cast<std::size_t>(between(0, static_cast<std::int64_t>(items.size()) - 1))];
  }

 private:
  std::uint64_t state_;
};

// The scenario as TOML that load_scenario_text reads back to the same Scenario (for what explore
// produces: generated data or a data file, no golden value, no expectations). `header` lines are
// written as comments first. `properties` is written only when `with_properties` (otherwise the
// loader derives them from the script, as for a file that leaves them out).
std::string scenario_to_toml(const Scenario& scenario, const std::vector<std::string>& header, bool with_properties);

// Loads TOML text as a scenario file named `name`; nullopt with the first diagnostic in `why`.
std::optional<Scenario> load_case(const std::string& toml, const std::string& name, std::string* why = nullptr);

// What the search may vary.
struct Space {
  std::vector<int> world_sizes;  // drawn from
  std::string backend = "gloo";
  std::int64_t max_samples = 20000;  // the large-count end of num_samples
  double deadline_seconds = 10;      // each case's deadline
  bool vary_metric_params = true;    // --param given: false keeps the parameters
  // The most batches a case feeds a rank, and the single process (0: no bound): each is a call
  // into the metric (and, with `compute every`, a sync). A bug that needs many samples needs no
  // more batches than these, and thousands of one-sample batches would spend a case's deadline
  // (docs/explore.md, "What it searches", measures it). A Python metric's call costs a
  // millisecond or more: explore takes 40 and 100 for a Python source.
  std::int64_t max_batches_per_rank = 64;
  std::int64_t max_batches_single = 256;
  // The data generator whose data the metric takes with these parameters (a metric parameter such
  // as `task` decides between binary, multiclass and multilabel data); empty: the base's, always.
  // explore's engine sets it (explorer.h: generator_chooser).
  std::function<std::string(const nlohmann::json& metric_params)> generator_for;
  // Whether cases draw [variants] dtypes: explore sets false for plugins and Python sources, whose
  // seeded draws (and so explore's tests) would change with it (docs/explore.md).
  bool input_dtypes = true;
};

// One generated case: the scenario (not yet loaded) and the parts of the space it touched
// (coverage keys such as "world_size=3", "batch=1", "step=update empty", "data=absent_class").
struct Case {
  Scenario scenario;
  std::vector<std::string> features;
};

// Case `index` of the search seeded `seed`: a function of (base, space, seed, index) only, so a
// seed reproduces the search whatever the budget cut off.
Case generate_case(const Scenario& base, const Space& space, std::uint64_t seed, std::uint64_t index);

// The parts of the space a scenario touches (generate_case's `features`, for any scenario).
std::vector<std::string> features_of(const Scenario& scenario);

// What makes two failures the same: the outcome, the properties that failed first-hand (not as a
// consequence of another), and how the ranks that did not finish ended. nullopt: not a failure
// (pass, skip).
struct Signature {
  std::string outcome;
  std::vector<std::string> properties;
  std::vector<std::string> blame;  // distinct end states of ranks that did not finish ("raised", "stuck")
  std::string text() const;        // "hang [no_hang] ranks: raised, stuck"
  bool operator==(const Signature& other) const {
    return outcome == other.outcome && properties == other.properties && blame == other.blame;
  }
};
std::optional<Signature> failure_signature(const Verdict& verdict);

// A hang with no sign of a bug of the metric's own, which the machine's load may explain: no rank
// raised, crashed or timed out inside a collective, and the ranks' collectives did not part (no
// deviation); or the single-process run of a plugin's or Python source's metric ran past the
// deadline (one process, no collective). explore runs it again with three times the deadline.
bool maybe_slow(const Verdict& verdict);

// The metric's class (or label) count among its parameters (num_classes, num_labels), or 0.
std::int64_t metric_class_count(const nlohmann::json& metric_params);

// The case's data made by `generator` instead: its class count tied to the metric's, its
// required parameters 3, the others drawn from `r` (each with a chance of 0.3) as a case's are.
void use_generator(Scenario& s, const std::string& generator, Rng& r);

// Widens a generated data spread that is below 1e-3 of the data's magnitude (scale against
// offset or mean, high - low against them): below that a one-pass variance cancels to float64
// rounding and its value depends on the batching, which equal_to_single cannot tell from a sync
// bug (space.cpp says more). The generator and every shrink candidate go through it.
void keep_spread_resolvable(Scenario& s);

// Simpler scenarios than `s`, simplest first, each one step smaller in one thing: world size,
// samples, script steps, batches, shard policy, input dtype, data parameters (classes,
// magnitudes) and metric parameters back to their defaults, the seed. They are not yet loaded
// (a candidate the loader rejects is dropped by the caller).
// Each candidate's batch_invariant sizes are re-derived for its samples and batch size within
// `most_batches` (batch_invariant_sizes_within, as generate_case does with Space::max_batches_single;
// 0: the loader's default).
std::vector<Scenario> shrink_candidates(const Scenario& s, std::int64_t most_batches = 0);

// The batch sizes batch_invariant tries besides the scenario's, written into the case: empty (the
// loader's 1 and 2 * batch_size + 1) up to `most_batches` samples (0: no bound); past it the
// smallest size that feeds the single process at most that many batches, and 2 * batch_size + 1.
// Batch size 1 over 18000 samples was 1.2 s of a 1.3 s case (90% of it in batch_invariant's
// single process), and the cases past 5000 samples were 30% of a search's time.
std::vector<std::int64_t> batch_invariant_sizes_within(std::int64_t samples, std::int64_t batch_size,
                                                       std::int64_t most_batches);

// The computes (indices among the script's computes) at which no rank had fed a sample since
// the last reset (batches [0, fed[r]) of `shards`). What a metric returns there (raise, 0, NaN)
// is the no-data convention a source declares (docs/python.md): explore leaves those computes
// out of agrees_with_reference, which compares them with the reference implementation's error.
std::set<int> computes_without_data(const ScriptPlan& plan, const ShardPlan& shards);

// A size to print: "ws 2, 3 samples, batch 1, 2 steps".
std::string size_text(const Scenario& s);

}  // namespace distmetrics::harness::explore
