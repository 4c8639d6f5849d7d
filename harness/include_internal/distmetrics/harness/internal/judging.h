// Judging one variant (harness/src/judging/): how the ranks' results become a verdict. Each
// rank's result is decoded once into a RankRun; the verdict is decided by an ordered list of
// small rules (rules()), each one case with its own test (harness/tests/judging_rules_test.cpp);
// who is to blame for a hang, a crash or a desync is said by one module (blame.cpp), fed by the
// runtime's diagnosis. The engine (variants/engine.cpp) plans the variant, runs it and hands the result
// here; nothing outside the harness and its tests includes this header.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/check.h"
#include "distmetrics/harness/data.h"
#include "distmetrics/harness/engine.h"
#include "distmetrics/harness/observation.h"
#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/variant.h"
#include "distmetrics/harness/verdict.h"
#include "distmetrics/runtime/deadline.h"
#include "distmetrics/runtime/job.h"

namespace distmetrics::harness::judging {

// One rank's result, decoded once: how it ended (the runtime's record) and, when it finished its
// task, the observation its script returned.
struct RankRun {
  const runtime::RankOutcome* outcome = nullptr;  // state, trace, blocked_in, error, how_died, log tail
  int rank = 0;
  std::optional<RankObservation> observation;     // a rank that finished: what its script saw
  std::string unreadable;                         // a rank that finished with a result that does not read
};
std::vector<RankRun> decode_ranks(const runtime::JobResult& run);

// What the report shows of each rank: its state, its share of the data, its collectives (each
// with the script step its record was stamped with).
std::vector<RankReport> rank_reports(const Scenario& scenario, const std::vector<RankRun>& ranks);

// The single-process reference as the engine built it for the rules.
struct ReferenceBuilt {
  SingleProcessReference single;
  bool timed_out = false;
  std::string left;  // timed out: what it had of the deadline ("the variant's deadline of 10 s (...)")
};

// Everything the rules read, and what the rules before have found.
struct Judging {
  Judging(const Scenario& scenario, const Variant& variant, const runtime::JobResult& run, double deadline);

  const Scenario& scenario;  // as judged: its input dtype's tolerance (judged_for_input_dtype)
  const Variant& variant;
  const runtime::JobResult& run;
  double deadline = 0;
  std::vector<RankRun> ranks;
  // The variant's data and plan as the engine made them; null when it could not (plan_error).
  const Dataset* data = nullptr;
  const VariantPlan* plan = nullptr;
  std::string plan_error;
  // Builds the single-process reference (called once, through reference()), and says whether a
  // builder of the engine's options made it (its failure then says what failed).
  std::function<ReferenceBuilt()> build_reference;
  bool own_reference_builder = false;
  // The engine's extra checks (conform's agrees_with_reference), ended at the variant's deadline.
  std::function<std::vector<PropertyResult>(const CheckContext&)> extra_checks;
  // Seconds since the variant started (the reference and the checks count against the deadline).
  std::function<double()> elapsed;
  // The blame for a stopped run's even split, from the scenario's other variants (blame.h).
  const class Baselines* baselines = nullptr;

  // The single-process reference, built once (build_reference) for the first that asks: the rule
  // that judges against it, or blame, whose even split its collectives may tell apart.
  const ReferenceBuilt& reference();

  // Found by the rules so far.
  std::vector<RankObservation> observations;  // every rank's, when all finished
  SingleProcessReference single;  // cut with `script`
  ScriptPlan script;              // the plan's, up to the compute where every process stopped
  double reference_started = 0;  // elapsed() when the reference was asked for
  std::optional<ReferenceBuilt> reference_built;  // reference(), once built
  std::string shard_text;        // "shards: rank 0 12 samples in 3 batches; ..."
  Verdict verdict;

  // `text` with the shard line under it (the first clue to an uneven-shard bug).
  std::string with_shards(std::string text) const;
};

// A rule decides the verdict (returns true) or leaves it to the next one.
struct Rule {
  const char* name;
  bool (*decide)(Judging& j);
};
// In the order they are tried; a verdict no rule decides is a pass.
const std::vector<Rule>& rules();
Verdict judge(Judging& j);

// The rules, for their tests.
bool rank_past_its_memory(Judging& j);      // memory_exceeded: whatever its peers did after
bool metric_does_not_support_it(Judging& j);  // skip: a rank's metric raised Unsupported
bool run_hung_or_crashed(Judging& j);       // hang or crash, blamed
bool ranks_did_not_all_report(Judging& j);  // error: a task raised outside the metric, a result unread
bool a_wait_was_abandoned(Judging& j);      // hang: a rank's wait gave up after a peer left
bool supervisor_could_not_plan(Judging& j);  // error
bool reference_did_not_build(Judging& j);   // hang past the deadline, or error
bool a_check_ran_past_the_deadline(Judging& j);  // judges the properties; hang when a check could not finish
bool metric_raised(Judging& j);             // error: a rank raised what the single process did not
bool a_property_failed(Judging& j);         // fail (hang for no_hang), led by its root cause

// A variant that died (its outcome hang, crash or error, decided): the properties the scenario
// checks, judged on the script steps every rank completed before (its observation, or the records
// its task sent step by step), each marked with those steps; a property whose evidence needs a
// later step is "not judged" with why (before_death.cpp). Appended to the verdict's properties.
void keep_verdicts_before_death(Judging& j);

// no_hang's results (its descriptor is properties/no_hang.cpp; the engine judges it). From how the
// run went (`reference_seconds`: the reference and the checks, which count against the deadline),
// or failed for `why`.
PropertyResult no_hang_of_run(const runtime::JobResult& run, double deadline, double reference_seconds = 0);
PropertyResult no_hang_failed(const std::string& why);
// "ranks 0 and 2 left the collective rank 1 waits in (detected after 1.2 s)"
std::string left_while_waiting(const std::vector<int>& left, const std::vector<int>& waiting, double seconds);

}  // namespace distmetrics::harness::judging
