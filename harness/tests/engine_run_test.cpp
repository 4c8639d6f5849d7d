// End to end through the rank pool: the engine flags each deliberately broken metric with the
// right property (or as a hang or crash blamed on the right rank), and a correct one passes
// everything.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "distmetrics/fixtures/scenario_test.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/rank_pool.h"
#include "distmetrics/harness/engine.h"
#include "distmetrics/harness/observation.h"
#include "distmetrics/harness/session.h"
#include "distmetrics/harness/scenario_python.h"
#include "engine_broken_metrics.h"

namespace dh = distmetrics::harness;
namespace dr = distmetrics::runtime;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(DISTMETRICS_TEST_SCENARIOS) + "/broken";

dh::LocalPools& pools() {
  static dh::LocalPools p({}, 2);
  return p;
}

// `folder`: broken/ (every file there validates in any build), or reference/ (needs Python hooks).
dh::Scenario load(const std::string& name, const std::string& folder = "broken") {
  dh::testing::register_broken_metrics();
  auto r = dh::load_scenario(std::string(DISTMETRICS_TEST_SCENARIOS) + "/" + folder + "/" + name + ".toml", folder + "/" + name);
  std::ostringstream diags;
  for (const auto& d : r.diagnostics) diags << d.to_string() << "\n";
  if (!r.scenario) throw std::runtime_error("bad test scenario:\n" + diags.str());
  return *r.scenario;
}

std::vector<dh::Verdict> run(const std::string& name, dh::Selection selection = {}, const std::string& folder = "broken") {
  const auto scenario = load(name, folder);
  dh::Engine engine;
  std::vector<dh::Verdict> verdicts;
  for (const auto& v : dh::expand_variants(scenario, dr::visible_gpu_count())) {
    if (!selection.matches(v)) continue;
    verdicts.push_back(v.skip ? dh::skip_verdict(v) : engine.run(scenario, v, pools().runner_for(v)));
  }
  return verdicts;
}

std::vector<std::string> failed(const dh::Verdict& v) {
  std::vector<std::string> names;
  for (const auto& p : v.properties)
    if (p.outcome == dh::Outcome::Fail) names.push_back(p.name);
  return names;
}

std::string explain(const dh::Verdict& v) {
  std::ostringstream out;
  out << v.variant.id << ": " << to_string(v.outcome) << ": " << v.reason << "\n" << v.diagnosis << "\n";
  for (const auto& p : v.properties) out << "  " << p.name << " " << to_string(p.outcome) << ": " << p.message << "\n";
  return out.str();
}

}  // namespace

TEST(EngineRun, ACorrectMetricPassesEveryPropertyOnEveryShard) {
  const auto verdicts = run("correct_mean");
  ASSERT_EQ(verdicts.size(), 2u * (4 + 4 + 4) - 2);  // empty_rank not at world size 1, per backend
  for (const auto& v : verdicts) {
    EXPECT_EQ(v.outcome, dh::Outcome::Pass) << explain(v);
    // no_hang + the six the default script judges + accepts_empty_batch (it has 'update empty')
    EXPECT_EQ(v.properties.size(), 8u) << explain(v);
  }
}

// `distmetrics run` checks a scenario's [reference] too. The Python hooks are a higher layer's
// (pyhost/, through the CLI; tested end to end with scikit-learn in pyhost_scenario_data): here
// the reference is the mean computed in C++ by at::mean, independent of the metric's sums.
TEST(EngineRun, AConsistentlyWrongMetricIsCaughtByAgreesWithReferenceAlone) {
  dh::ScenarioPython hooks;
  hooks.check = [](const std::string&) {};
  hooks.reference = [](const std::string& spec, const nlohmann::json&, const distmetrics::metrics::Batch& all) {
    EXPECT_EQ(spec, "statistics:fmean");
    EXPECT_FALSE(all.target.defined());
    return nlohmann::json(all.input.to(at::kDouble).mean().item<double>());
  };
  dh::install_scenario_python(hooks);
  dh::allow_scenario_python(true);
  const auto verdicts = run("count_minus_one", {}, "reference");
  const auto data = dh::generate_data(load("count_minus_one", "reference").data);
  dh::allow_scenario_python(false);
  ASSERT_EQ(verdicts.size(), 6u);
  for (const auto& v : verdicts) {
    EXPECT_EQ(v.outcome, dh::Outcome::Fail) << explain(v);
    EXPECT_EQ(failed(v), (std::vector<std::string>{"agrees_with_reference"})) << explain(v);
    const auto* ref = v.property("agrees_with_reference");
    ASSERT_NE(ref, nullptr);
    // 41 samples: the metric gives sum / 40 where the reference gives sum / 41.
    ASSERT_TRUE(ref->single && ref->single->value && ref->single->value->is_number()) << explain(v);
    EXPECT_NE(ref->message.find("reference statistics:fmean: "), std::string::npos) << ref->message;
    EXPECT_NE(ref->message.find("rank 0, compute 3"), std::string::npos) << ref->message;
    EXPECT_EQ(v.variant.reproduce().rfind("distmetrics run --allow-python ", 0), 0u) << v.variant.reproduce();
  }
  const double mean = data.input.to(at::kDouble).mean().item<double>();
  EXPECT_NEAR(verdicts[0].property("agrees_with_reference")->single->value->get<double>(), mean * 41 / 40, 1e-9);
}

TEST(EngineRun, NoSyncIsCaughtByEqualToSingle) {
  const auto verdicts = run("no_sync");
  ASSERT_EQ(verdicts.size(), 1u);
  const auto& v = verdicts[0];
  EXPECT_EQ(v.outcome, dh::Outcome::Fail) << explain(v);
  EXPECT_EQ(failed(v), (std::vector<std::string>{"equal_to_single", "ranks_agree", "update_after_compute", "reset_replay"}))
      << explain(v);
  // The verdict leads with the root cause; the other failures are listed as its consequences.
  EXPECT_EQ(v.reason, "root cause: no sync: the ranks return different values, each from its own shard") << v.reason;
  ASSERT_TRUE(v.root_cause);
  EXPECT_EQ(v.root_cause->property, "equal_to_single");
  EXPECT_EQ(v.root_cause->consequences, (std::vector<std::string>{"ranks_agree", "update_after_compute", "reset_replay"}));
  EXPECT_EQ(v.properties.at(1).name, "equal_to_single");  // after no_hang, the cause first
  EXPECT_EQ(v.property("ranks_agree")->consequence_of, "equal_to_single");
  const auto* p = v.property("equal_to_single");
  EXPECT_EQ(p->message.rfind("root cause: no sync", 0), 0u) << p->message;
  EXPECT_NE(p->message.find("equal_to_single failed at compute 1 of 4"), std::string::npos) << p->message;
  EXPECT_NE(p->message.find("single process: "), std::string::npos);
  // Every rank's shard, the first clue to an uneven-shard bug.
  EXPECT_NE(p->full_message().find("shards: rank 0 "), std::string::npos) << p->full_message();
  ASSERT_EQ(v.shards.size(), 2u);
  EXPECT_EQ(v.shards[0].samples + v.shards[1].samples, 37);
  EXPECT_NE(p->message.find("rank 1: "), std::string::npos);
  EXPECT_NE(p->full_message().find("reproduce: distmetrics run " + kDir + "/no_sync.toml --filter 'broken/no_sync:gloo-ws2-uneven-cpu'"),
            std::string::npos)
      << p->message;
  EXPECT_EQ(p->values.size(), 2u);
  ASSERT_TRUE(p->difference);
  EXPECT_GT(*p->difference, 1e-6);
}

TEST(EngineRun, SyncThatOverwritesLocalStateIsCaughtByUpdateAfterCompute) {
  auto v = run("overwrite_sync").at(0);
  EXPECT_EQ(failed(v), (std::vector<std::string>{"update_after_compute"})) << explain(v);
  EXPECT_EQ(v.reason.rfind("root cause: compute() changes the local state", 0), 0u) << v.reason;
  // With the default script the second compute already reduces twice, and the state changed.
  v = run("overwrite_sync_default").at(0);
  const auto names = failed(v);
  EXPECT_NE(std::find(names.begin(), names.end(), "idempotent"), names.end()) << explain(v);
  EXPECT_NE(std::find(names.begin(), names.end(), "update_after_compute"), names.end()) << explain(v);
}

TEST(EngineRun, SumWhereMaxIsNeededIsCaughtByEqualToSingle) {
  const auto v = run("sum_for_max").at(0);
  EXPECT_EQ(v.outcome, dh::Outcome::Fail);
  const auto names = failed(v);
  ASSERT_FALSE(names.empty()) << explain(v);
  EXPECT_EQ(names.front(), "equal_to_single") << explain(v);
  // The ranks agree on the wrong value: the sync itself reduces wrongly (not a missing sync).
  EXPECT_EQ(v.reason.rfind("root cause: the sync reduces wrongly", 0), 0u) << v.reason;
  EXPECT_NE(v.property("equal_to_single")->message.find("SUM"), std::string::npos);
}

// The same bug where the only compute follows a reset: reset_replay compares it with the single
// process and fails; equal_to_single judged nothing, so nothing shows the sync right and the
// root cause must not blame reset() (explore found "reset() leaves something behind" here).
TEST(EngineRun, AFailedFirstComparisonWithTheSingleProcessAfterAResetIsNotBlamedOnReset) {
  const auto v = run("sum_for_max_after_reset").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Fail) << explain(v);
  EXPECT_EQ(failed(v), (std::vector<std::string>{"reset_replay"})) << explain(v);
  EXPECT_EQ(v.property("equal_to_single"), nullptr) << explain(v);  // the script has no compute for it
  EXPECT_EQ(v.reason, "root cause: the ranks differ from the single process at the first compute compared with it (no "
                      "earlier compute shows the sync right)")
      << explain(v);
  EXPECT_NE(v.property("reset_replay")->message.find("PyTorch-Ignite #1813"), std::string::npos) << explain(v);
}

TEST(EngineRun, PerBatchStatisticsAreCaughtByBatchInvariant) {
  const auto v = run("per_batch_mean").at(0);
  EXPECT_EQ(failed(v), (std::vector<std::string>{"batch_invariant"})) << explain(v);
  EXPECT_EQ(v.reason, "root cause: the result depends on the batch size: per-batch statistics") << v.reason;
}

TEST(EngineRun, ARankThatRaisesAloneIsAHangBlamedOnIt) {
  const auto v = run("raise_alone").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Hang) << explain(v);
  EXPECT_EQ(v.reason.rfind("rank 2 to blame: rank 2 raised NotComputableError", 0), 0u) << v.reason;
  EXPECT_NE(v.diagnosis.find("A rank must never raise alone"), std::string::npos) << v.diagnosis;
  EXPECT_EQ(failed(v), (std::vector<std::string>{"no_hang"}));
  // The pool recovers: the next variant on it passes.
  dh::Selection ws3;
  ws3.world_sizes = {3};
  ws3.shards = {"even"};
  ws3.backends = {"gloo"};
  for (const auto& next : run("correct_mean", ws3)) EXPECT_EQ(next.outcome, dh::Outcome::Pass) << explain(next);
}

TEST(EngineRun, DifferentNumbersOfCollectivesPerRankNeverHangTheRun) {
  const auto v = run("gather_per_element").at(0);
  EXPECT_TRUE(v.outcome == dh::Outcome::Hang || v.outcome == dh::Outcome::Error) << explain(v);
  EXPECT_NE(v.diagnosis.find("all_gather"), std::string::npos) << explain(v);
  // One gather per element: the single-process run, on all the data, gathers more than either
  // rank did in the compute both passed, so it is neither side's sequence and blames neither.
  if (v.deviation) EXPECT_TRUE(v.deviation->blamed.empty()) << explain(v);
}

TEST(EngineRun, ARankThatDiesIsACrashNamingIt) {
  const auto v = run("abort").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Crash) << explain(v);
  EXPECT_NE(v.reason.find("rank 1"), std::string::npos) << v.reason;
  EXPECT_NE(v.diagnosis.find("SIGABRT"), std::string::npos) << v.diagnosis;
}

TEST(EngineRun, ARankThatSkipsAComputesCollectivesIsNamedByCompute) {
  const auto v = run("rank_local_cache").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Hang) << explain(v);
  // Blamed per script step: rank 1 passed compute 2 without its collectives, which rank 0 issued
  // there as in every other compute; what followed comes after.
  EXPECT_EQ(v.reason.rfind("rank 1 to blame: rank 1 returned from compute 2 (script step 3) without its all_reduce(sum) #", 0), 0u)
      << v.reason;
  EXPECT_NE(v.diagnosis.find("Rank 1 is blamed: in the other computes where the ranks agree (compute 1 (script step 2), "
                             "compute 3 (script step 7)), every rank issued what rank 0 issued here"),
            std::string::npos)
      << v.diagnosis;
  EXPECT_NE(v.diagnosis.find("Then rank 1 issued its collectives of compute 3 (script step 7) while rank 0 waited in those "
                             "of compute 2 (script step 3)"),
            std::string::npos)
      << v.diagnosis;
  ASSERT_TRUE(v.deviation);
  EXPECT_EQ(v.deviation->script_step, 3);
  EXPECT_EQ(v.deviation->blamed, (std::vector<int>{1}));
  // The hang is reported as seen: rank 1 left, long before the deadline.
  EXPECT_EQ(v.property("no_hang")->message.rfind("no_hang failed: rank 1 left the collective rank 0 waits in (detected after ", 0), 0u)
      << v.property("no_hang")->message;
}

// World size 2 as a new user runs it (no other variant of the scenario): a rank that breaks the
// metric's sequence in the only compute leaves as many ranks on each side. The single-process run
// (equal_to_single's) issues the metric's own sequence there: the rank that broke it is blamed, on
// gloo and on mpi, and the verdict names that baseline. `what`: what the reason says it did.
void expect_blamed_by_the_single_process_run(const std::string& scenario, int blamed, const std::string& what) {
  const auto verdicts = run(scenario);
  ASSERT_EQ(verdicts.size(), 2u);
  std::set<std::string> backends;
  for (const auto& v : verdicts) {
    backends.insert(v.variant.backend);
    EXPECT_TRUE(v.outcome == dh::Outcome::Hang || v.outcome == dh::Outcome::Crash) << explain(v);
    const std::string rank = "rank " + std::to_string(blamed);
    EXPECT_EQ(v.reason.rfind(rank + " to blame: " + rank + " deviated from the metric's sequence in compute 1 (script step 3): "
                                 "in the single-process run (the same metric in one process, on all the data), compute 1 "
                                 "(script step 3) issued all_reduce(sum) (int64 [1]), all_reduce(sum) (float64 [1]), as rank " +
                                 std::to_string(1 - blamed) + " did here; " + rank + " " + what,
                             0),
              0u)
        << explain(v);
    EXPECT_NE(v.reason.find("(the ranks split evenly: the single-process run is the baseline)."), std::string::npos) << v.reason;
    EXPECT_EQ(v.diagnosis.find("neither side is blamed"), std::string::npos) << explain(v);
  }
  EXPECT_EQ(backends, (std::set<std::string>{"gloo", "mpi"}));
}

TEST(EngineRun, AnExtraCollectiveAtWorldSize2IsBlamedByTheSingleProcessRun) {
  expect_blamed_by_the_single_process_run("extra_barrier_on_rank1", 1, "issued barrier #2 there, which rank 0 never issued");
}

TEST(EngineRun, ASkippedCollectiveAtWorldSize2IsBlamedByTheSingleProcessRun) {
  expect_blamed_by_the_single_process_run("skips_sync_on_rank0", 0,
                                          "passed it without all_reduce(sum) #0 (int64 [1]), which rank 1 issued");
}

// The runtime's tie-break alone would blame rank 1 (the group without rank 0).
TEST(EngineRun, AMismatchedCollectiveAtWorldSize2IsBlamedByTheSingleProcessRun) {
  expect_blamed_by_the_single_process_run("gathers_on_rank0", 0, "issued all_gather(shapes) #0 (int64 [");
}

TEST(EngineRun, ACrashNamesTheStepTheMethodWhatTheRankPrintedAndWhereItDied) {
  const auto v = run("segfault_in_update").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Crash) << explain(v);
  EXPECT_NE(v.reason.find("rank 1 crashed (killed by signal 11 (SIGSEGV) in script step 1 ('update 50%'): update() of batch 2 "
                          "(4 samples))"),
            std::string::npos)
      << v.reason;
  EXPECT_NE(v.diagnosis.find("| SegfaultInUpdateMean: rank 1 about to fail in its second update"), std::string::npos) << v.diagnosis;
  EXPECT_NE(v.diagnosis.find("| distmetrics: rank 1 killed by signal 11 (SIGSEGV) in script step 1"), std::string::npos)
      << v.diagnosis;
  EXPECT_NE(v.diagnosis.find("distmetrics::harness::run_scenario_variant_task"),
            std::string::npos)
      << v.diagnosis;
  EXPECT_NE(v.diagnosis.find("shards: rank 0 12 samples in 3 batches; rank 1 12 samples in 3 batches"), std::string::npos)
      << v.diagnosis;
}

TEST(EngineRun, AnErrorTheSingleProcessDoesNotRaiseIsAnErrorOutcome) {
  const auto v = run("rejects_when_distributed").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Error) << explain(v);
  EXPECT_EQ(v.reason.rfind("rank 0 raised InputError at update (script step 1): RejectsWhenDistributedMean", 0), 0u) << v.reason;
  EXPECT_NE(v.diagnosis.find("rank 1: InputError at update"), std::string::npos) << v.diagnosis;
  EXPECT_NE(v.diagnosis.find("(0 collectives)"), std::string::npos) << v.diagnosis;
  // The exception's full type and where it was raised from (when it says).
  EXPECT_NE(v.diagnosis.find("[distmetrics::metrics::InputError]"), std::string::npos) << v.diagnosis;
}

// Every rank and the single process raise NotComputableError at the compute after a reset with
// no data: every script ends there, so the compute after it (update_after_compute's) is reached
// by no process and not judged, instead of failing with "did not get there".
TEST(EngineRun, AnErrorEveryProcessRaisesEndsTheScriptForTheSingleProcessToo) {
  const auto v = run("stops_at_shared_error").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Pass) << explain(v);
  ASSERT_NE(v.property("reset_replay"), nullptr);
  EXPECT_EQ(v.property("reset_replay")->outcome, dh::Outcome::Pass) << explain(v);  // the same error on both sides
  ASSERT_NE(v.property("update_after_compute"), nullptr);
  const auto& later = *v.property("update_after_compute");
  EXPECT_EQ(later.outcome, dh::Outcome::Skip) << explain(v);
  EXPECT_EQ(later.message, "update_after_compute: not judged: every rank's script stopped at compute 2 (script step 4: "
                           "'compute'), raising NotComputableError as the single process does there; no process reached "
                           "the computes after it")
      << explain(v);
  EXPECT_EQ(v.property("equal_to_single")->outcome, dh::Outcome::Pass) << explain(v);
}

TEST(EngineRun, AnEmptyBatchTheMetricRejectsIsAFindingOfItsOwnAndTheScriptGoesOn) {
  const auto verdicts = run("rejects_empty");
  ASSERT_EQ(verdicts.size(), 3u);
  for (const auto& v : verdicts) {
    ASSERT_EQ(v.outcome, dh::Outcome::Fail) << explain(v);
    EXPECT_EQ(failed(v), (std::vector<std::string>{"accepts_empty_batch"})) << explain(v);
    EXPECT_EQ(v.reason.rfind("root cause: the metric rejects an empty batch: InputError: ", 0), 0u) << explain(v);
    EXPECT_NE(v.reason.find("no rows"), std::string::npos) << explain(v);
    // Every compute of the script was judged: the rest of it ran without the empty update.
    for (const auto* name : {"equal_to_single", "idempotent", "update_after_compute", "reset_replay", "ranks_agree"}) {
      ASSERT_NE(v.property(name), nullptr) << name;
      EXPECT_EQ(v.property(name)->outcome, dh::Outcome::Pass) << name << ": " << explain(v);
    }
    EXPECT_NE(v.property("accepts_empty_batch")->message.find("rank 0: script step 4 ('update empty ranks=0') raised InputError"),
              std::string::npos)
        << explain(v);
  }
}

TEST(EngineRun, ARejectedEmptyBatchDoesNotHideAMissingSync) {
  const auto verdicts = run("rejects_empty_no_sync");
  ASSERT_EQ(verdicts.size(), 3u);
  EXPECT_EQ(failed(verdicts[0]), (std::vector<std::string>{"accepts_empty_batch"})) << explain(verdicts[0]);  // ws 1
  for (std::size_t i = 1; i < 3; ++i) {
    const auto& v = verdicts[i];
    ASSERT_EQ(v.outcome, dh::Outcome::Fail) << explain(v);
    EXPECT_EQ(v.reason.rfind("root cause: no sync", 0), 0u) << explain(v);
    EXPECT_EQ(v.properties.at(1).name, "equal_to_single") << explain(v);
    const auto* empty = v.property("accepts_empty_batch");
    ASSERT_NE(empty, nullptr);
    EXPECT_EQ(empty->outcome, dh::Outcome::Fail);
    EXPECT_EQ(empty->consequence_of, "") << explain(v);
    ASSERT_TRUE(v.root_cause) << explain(v);
    EXPECT_EQ(v.root_cause->consequences, (std::vector<std::string>{"ranks_agree", "update_after_compute", "reset_replay"}))
        << explain(v);
  }
}

TEST(EngineRun, ANanRightAfterAnEmptyBatchIsBlamedOnTheEmptyBatch) {
  const auto verdicts = run("nan_after_empty", [] {
    dh::Selection s;
    s.world_sizes = {2};
    return s;
  }());
  ASSERT_EQ(verdicts.size(), 1u);
  const auto& v = verdicts[0];
  ASSERT_EQ(v.outcome, dh::Outcome::Fail) << explain(v);
  EXPECT_EQ(failed(v), (std::vector<std::string>{"update_after_compute"})) << explain(v);
  EXPECT_EQ(v.reason.rfind("root cause: an empty batch makes the result NaN", 0), 0u) << explain(v);
  ASSERT_TRUE(v.root_cause) << explain(v);
  EXPECT_NE(v.root_cause->evidence.find("the first compute after 'update empty ranks=0' (script step 4"),
            std::string::npos)
      << explain(v);
}

TEST(EngineRun, AMetricThatSaysUnsupportedIsASkipWithItsReasonForThatVariantOnly) {
  const auto verdicts = run("unsupported_on_three_ranks");
  ASSERT_EQ(verdicts.size(), 3u);
  EXPECT_EQ(verdicts[0].outcome, dh::Outcome::Pass) << explain(verdicts[0]);
  EXPECT_EQ(verdicts[1].outcome, dh::Outcome::Pass) << explain(verdicts[1]);
  ASSERT_EQ(verdicts[2].outcome, dh::Outcome::Skip) << explain(verdicts[2]);
  EXPECT_EQ(verdicts[2].variant.world_size, 3);
  EXPECT_EQ(verdicts[2].reason,
            "UnsupportedOnThreeRanksMean does not support this: this mean is not written for 3 ranks (rank 0, setup)")
      << explain(verdicts[2]);
}

// Every phase counts against the deadline: a single-process reference that never finishes is
// ended (it runs in a child process, beside the ranks) and the verdict is a hang naming it, within the deadline
// plus a generous margin (a bound on hanging, not a speed check), and it says what took how long.
TEST(EngineRun, ASingleProcessReferencePastTheDeadlineIsAHangNamingIt) {
  const auto started = std::chrono::steady_clock::now();
  const auto v = run("endless_reference").at(0);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(3 + 15));
  ASSERT_EQ(v.outcome, dh::Outcome::Hang) << explain(v);
  // It computes beside the ranks (Engine::run starts it first), so it has the whole deadline.
  EXPECT_EQ(v.reason.rfind("the single-process reference did not finish within the variant's deadline of 3 s (it ran "
                           "beside the ranks, which took ",
                           0),
            0u)
      << v.reason;
  EXPECT_EQ(failed(v), (std::vector<std::string>{"no_hang"}));
  EXPECT_GE(v.seconds, 3.0 - 0.05);  // it took the whole deadline, and says so
}

TEST(EngineRun, APassSaysHowLongEveryPhaseTook) {
  const auto v = run("correct_mean").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Pass) << explain(v);
  const std::string message = v.property("no_hang")->message;
  EXPECT_EQ(message.rfind("no_hang held: finished in ", 0), 0u) << message;
  EXPECT_NE(message.find("(ranks "), std::string::npos) << message;
  EXPECT_NE(message.find(", single-process reference and checks "), std::string::npos) << message;
  // The verdict's seconds are the whole variant, never less than the phases it reports.
  const double reported = std::stod(message.substr(std::string("no_hang held: finished in ").size()));
  EXPECT_GE(v.seconds, reported);
}

// A rank follows the plan it is sent and plans nothing itself: given a hand-made plan that
// differs from what plan_variant makes of the scenario (other batches, samples out of order and
// the script's steps its own), each rank feeds exactly its batches of it.
TEST(EngineRun, ARankFollowsThePlanItIsSentNotOneOfItsOwn) {
  auto scenario = load("correct_mean");
  scenario.script = {dh::parse_step("update rest"), dh::parse_step("compute"), dh::parse_step("update empty"),
                     dh::parse_step("compute")};
  dh::Variant variant;
  for (const auto& v : dh::expand_variants(scenario, dr::visible_gpu_count()))
    if (v.backend == "gloo" && v.world_size == 2 && v.shard == "even" && !v.skip) variant = v;
  ASSERT_EQ(variant.world_size, 2);
  dh::VariantPlan given;
  given.shards.policy = "even";
  given.shards.world_size = 2;
  given.shards.ranks = {{{36, 0}, {7}}, {{3, 2, 1}}};
  given.script = dh::simulate_script(scenario.script, {2, 1});
  const dh::Dataset data = dh::generate_data(scenario.data);
  const dh::VariantPlan own = dh::plan_variant(scenario, data, variant.shard, 2);
  ASSERT_NE(own.shards.ranks, given.shards.ranks);  // the property is checked, not assumed

  const auto run = pools().runner_for(variant).run(dh::make_variant_job(scenario, variant, &given, 30));
  ASSERT_EQ(run.status, dr::RunStatus::Completed) << run.diagnosis;
  ASSERT_EQ(run.ranks.size(), 2u);
  const auto mean_of = [&](const std::vector<dh::SampleIndices>& batches) {
    return dh::single_process_result(scenario, data, batches).value.value().get<double>();
  };
  const double all = mean_of({{36, 0}, {7}, {3, 2, 1}});
  for (int r = 0; r < 2; ++r) {
    const auto obs = dh::RankObservation::from_json(run.ranks[r].result);
    EXPECT_FALSE(obs.error) << obs.error->message;
    EXPECT_EQ(obs.samples, 3);
    EXPECT_EQ(obs.batches, r == 0 ? 2 : 1);
    ASSERT_EQ(obs.computes.size(), 2u);
    for (const auto& compute : obs.computes) {
      ASSERT_TRUE(compute.result.value) << compute.result.error;
      EXPECT_NEAR(compute.result.value->get<double>(), all, 1e-12) << "rank " << r;
    }
  }
  EXPECT_GT(std::abs(all - mean_of(own.shards.ranks[0])), 0.01);

  // Without a plan (the supervisor could not make one), every rank says so and runs nothing.
  const auto unplanned =
      pools().runner_for(variant).run(dh::make_variant_job(scenario, variant, nullptr, 30, "no data: the disk is gone"));
  ASSERT_EQ(unplanned.ranks.size(), 2u);
  for (const auto& rank : unplanned.ranks) {
    const auto obs = dh::RankObservation::from_json(rank.result);
    ASSERT_TRUE(obs.error);
    EXPECT_EQ(obs.error->op, "setup");
    EXPECT_EQ(obs.error->message, "the supervisor could not plan the variant: no data: the disk is gone");
    EXPECT_TRUE(obs.computes.empty());
  }
}

TEST(EngineRun, Float32SumsLosePrecisionBeyondTwoToThe24) {
  // PR #2959: the same data with float64 sums passes (scenarios/regression/ignite_pr2959_large_counts).
  const auto v = run("float32_counts").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Fail) << explain(v);
  EXPECT_EQ(failed(v).front(), "equal_to_single") << explain(v);
  EXPECT_EQ(v.reason.rfind("root cause: float32 rounding", 0), 0u) << v.reason;
  EXPECT_NE(v.property("equal_to_single")->message.find("rtol 1e-12"), std::string::npos);
}

const dh::PropertyResult& property(const dh::Verdict& v, const std::string& name) {
  const auto* p = v.property(name);
  if (!p) throw std::runtime_error(v.variant.id + " has no property " + name + "\n" + explain(v));
  return *p;
}

TEST(EngineRun, DeclaredStatesRoundTripAndMergeOnEveryShardAndWorldSize) {
  const auto verdicts = run("state_checks");
  ASSERT_EQ(verdicts.size(), 2u + 2u + 1u);  // ws1 uneven; ws2, ws3 uneven and empty_rank
  for (const auto& v : verdicts) {
    EXPECT_EQ(v.outcome, dh::Outcome::Pass) << explain(v);
    // The restored instance is compared at every compute from the first (the state is saved
    // just before it), the merged one at every compute: the default script has four.
    EXPECT_EQ(property(v, "state_roundtrip").outcome, dh::Outcome::Pass) << explain(v);
    EXPECT_NE(property(v, "state_roundtrip").message.find("held at compute 1, 2, 3, 4 on all"), std::string::npos)
        << explain(v);
    EXPECT_NE(property(v, "merge_state").message.find("held at compute 1, 2, 3, 4 on all"), std::string::npos)
        << explain(v);
    ASSERT_TRUE(property(v, "merge_state").difference);
    EXPECT_LT(*property(v, "merge_state").difference, 1e-12);
  }
}

TEST(EngineRun, AStateThatSaveStateLeavesOutIsCaughtByStateRoundtrip) {
  const auto v = run("count_not_saved").at(0);
  EXPECT_EQ(v.outcome, dh::Outcome::Fail) << explain(v);
  // The merge cannot load the incomplete state either: a consequence of the same cause.
  EXPECT_EQ(failed(v), (std::vector<std::string>{"state_roundtrip", "merge_state"})) << explain(v);
  EXPECT_EQ(property(v, "merge_state").consequence_of, "state_roundtrip") << explain(v);
  EXPECT_EQ(v.reason, "root cause: the saved state does not restore the metric: an instance loaded from it gives other results");
  const auto& p = property(v, "state_roundtrip");
  EXPECT_NE(p.message.find("state_roundtrip failed at compute 1 of 4"), std::string::npos) << p.message;
  // The restored count starts from zero, with nothing fed since the save: every restored
  // instance finds no samples, while the original gives the single-process value.
  const auto* single = v.property("equal_to_single");
  ASSERT_TRUE(single && single->outcome == dh::Outcome::Pass) << explain(v);
  ASSERT_TRUE(p.single);
  const std::string original = "(the original: " + p.single->text() + ")";
  for (const char* rank : {"rank 0: raised NotComputableError", "rank 1: raised NotComputableError"})
    EXPECT_NE(p.message.find(rank), std::string::npos) << p.message;
  EXPECT_NE(p.message.find(original), std::string::npos) << original << "\n" << p.message;
  EXPECT_NE(property(v, "merge_state").message.find("the saved state has no \"count\""), std::string::npos)
      << explain(v);
}

TEST(EngineRun, AMergeThatForgetsItsOwnStateIsCaughtByMergeState) {
  const auto verdicts = run("merge_forgets_self");
  ASSERT_EQ(verdicts.size(), 2u);
  for (const auto& v : verdicts) {
    EXPECT_EQ(failed(v), (std::vector<std::string>{"merge_state"})) << explain(v);
    EXPECT_EQ(v.reason, "root cause: merging the ranks' states gives another result than the distributed compute");
    EXPECT_NE(property(v, "merge_state").message.find("merge_state failed at compute 1 of 4"), std::string::npos)
        << explain(v);
  }
  // World size 1: nothing is left after forgetting rank 0's state: the merged instance raises.
  EXPECT_NE(property(verdicts[0], "merge_state").message.find("NotComputableError"), std::string::npos)
      << explain(verdicts[0]);
}

TEST(EngineRun, MergeStateMergesOnceAComputeOnOneRankAndJudgesEveryRank) {
  // Every rank gathers the same bytes: one rank merges them, the ranks taking turns, and every
  // rank's distributed result is judged against that merge. The default script's computes:
  // 1 and 2 gather the same states (nothing fed between them), as do 3 and 4 (reset, then the
  // same batches replayed): two merges in all, compute 1's on rank 0 and compute 3's on rank 2
  // (each rank merging at every compute made twelve).
  const auto log = std::filesystem::temp_directory_path() / ("distmetrics-merges-" + std::to_string(::getpid()));
  std::filesystem::remove(log);
  // The workers fork from the zygote test_main took before this test set the variable: a new one
  // takes it, for a pool of this test's own.
  ASSERT_EQ(::setenv("DISTMETRICS_TEST_MERGE_LOG", log.c_str(), 1), 0);
  dr::stop_worker_zygote();
  dr::start_worker_zygote();
  dh::Verdict v;
  {
    dh::LocalPools own({}, 2);
    const auto scenario = load("merge_logged");
    const auto variants = dh::expand_variants(scenario, 0);
    ASSERT_EQ(variants.size(), 1u);
    v = dh::Engine().run(scenario, variants[0], own.runner_for(variants[0]));
  }
  ::unsetenv("DISTMETRICS_TEST_MERGE_LOG");
  EXPECT_EQ(v.outcome, dh::Outcome::Pass) << explain(v);
  EXPECT_NE(property(v, "merge_state").message.find("held at compute 1, 2, 3, 4 on all 3 rank(s)"), std::string::npos)
      << explain(v);
  std::ifstream in(log);
  std::vector<std::string> pids;
  for (std::string line; std::getline(in, line);) pids.push_back(line);
  std::filesystem::remove(log);
  ASSERT_EQ(pids.size(), 2u) << "merges logged by pids: " << ::testing::PrintToString(pids);
  EXPECT_NE(pids[0], pids[1]) << "the ranks take turns";
}

TEST(EngineRun, AMergeThatForgetsItsOwnStateIsJudgedOnEveryRank) {
  // ws2: the merge (rank 1's state alone) differs from the distributed mean on both ranks, and
  // both ranks' lines say so, though one rank merged.
  const auto verdicts = run("merge_forgets_self");
  const auto& p = property(verdicts.at(1), "merge_state");
  EXPECT_EQ(p.outcome, dh::Outcome::Fail) << explain(verdicts[1]);
  for (const char* rank : {"rank 0", "rank 1"}) EXPECT_NE(p.message.find(rank), std::string::npos) << p.message;
  ASSERT_EQ(p.values.size(), 2u);
  ASSERT_TRUE(p.values[0] && p.values[1]);
  EXPECT_EQ(p.values[0]->text(), p.values[1]->text()) << "every rank is judged against the one merge";
}

TEST(EngineRun, AMetricThatCannotSaveItsStateSkipsTheStateChecksWithTheReason) {
  const auto v = run("no_saved_state").at(0);
  EXPECT_EQ(v.outcome, dh::Outcome::Pass) << explain(v);
  EXPECT_EQ(property(v, "state_roundtrip").outcome, dh::Outcome::Skip) << explain(v);
  EXPECT_EQ(property(v, "state_roundtrip").message,
            "state_roundtrip: not applicable: CorrectMean cannot save its state (Metric::save_state gives nothing)");
  EXPECT_EQ(property(v, "merge_state").outcome, dh::Outcome::Skip) << explain(v);
  EXPECT_EQ(property(v, "merge_state").message,
            "merge_state: not applicable: CorrectMean cannot merge saved states (Metric::can_merge_state is false)");
}

TEST(EngineRun, InputDtypesAreAVariantAxisWithTheDtypesTolerance) {
  const auto verdicts = run("input_dtypes");
  ASSERT_EQ(verdicts.size(), 4u);
  const std::vector<std::string> dtypes = {"float16", "bfloat16", "float32", "float64"};
  const std::vector<double> rtols = {1e-3, 8e-3, 1e-6, 1e-6};  // the table's, or the scenario's 1e-6
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    const auto& v = verdicts[i];
    EXPECT_EQ(v.variant.id, "broken/input_dtypes:gloo-ws1-even-cpu-" + dtypes[i]);
    EXPECT_EQ(v.variant.dtype, dtypes[i]);
    EXPECT_EQ(v.outcome, dh::Outcome::Pass) << explain(v);
    ASSERT_TRUE(v.tolerance) << v.variant.id;
    EXPECT_DOUBLE_EQ(v.tolerance->rtol, rtols[i]) << v.variant.id;
  }
}

TEST(EngineRun, CountsKeptInTheInputsDtypeAreCaughtInFloat16AndBfloat16) {
  const auto verdicts = run("input_dtype_counts");
  ASSERT_EQ(verdicts.size(), 4u);
  const auto& f16 = verdicts[0];
  const auto& bf16 = verdicts[1];
  EXPECT_EQ(verdicts[2].outcome, dh::Outcome::Pass) << explain(verdicts[2]);  // float32: counts exact
  EXPECT_EQ(verdicts[3].outcome, dh::Outcome::Pass) << explain(verdicts[3]);
  // float16: 1500 samples at compute 1 still count right; all 3000 count as 2048 (a float16 count
  // of ones stops there), so the mean is 3000/2048 times the true one.
  EXPECT_EQ(f16.outcome, dh::Outcome::Fail) << explain(f16);
  EXPECT_EQ(property(f16, "equal_to_single").outcome, dh::Outcome::Pass) << explain(f16);
  const auto& later = property(f16, "update_after_compute");
  ASSERT_EQ(later.outcome, dh::Outcome::Fail) << explain(f16);
  const double single = later.single->value->get<double>();
  const double rank0 = later.values.at(0)->value->get<double>();
  EXPECT_NEAR(rank0 / single, 3000.0 / 2048.0, 1e-9) << later.message;
  // bfloat16: counts stop at 256, before compute 1's 1500 samples.
  EXPECT_EQ(property(bf16, "equal_to_single").outcome, dh::Outcome::Fail) << explain(bf16);
  const auto& first = property(bf16, "equal_to_single");
  EXPECT_NEAR(first.values.at(0)->value->get<double>() / first.single->value->get<double>(), 1500.0 / 256.0, 1e-9)
      << first.message;
}

TEST(EngineRun, ComputeEveryJudgesTheValueAfterEveryRoundOfBatches) {
  const auto v = run("compute_every").at(0);
  EXPECT_EQ(v.outcome, dh::Outcome::Pass) << explain(v);
  // Shards of 6 and 4 batches; after 'update 1', 'update rest' has 5 rounds (rank 1 runs out
  // after 3): computes 1 to 5, then the plain compute 6.
  ASSERT_EQ(v.shards.at(0).batches, 6) << explain(v);
  ASSERT_EQ(v.shards.at(1).batches, 4) << explain(v);
  EXPECT_EQ(property(v, "equal_to_single").message.rfind("equal_to_single held at compute 1 on all 2", 0), 0u)
      << explain(v);
  EXPECT_EQ(property(v, "update_after_compute").message.rfind("update_after_compute held at compute 2, 3, 4, 5 on all 2", 0), 0u)
      << explain(v);
  EXPECT_EQ(property(v, "idempotent").message.rfind("idempotent held at compute 6 on all 2", 0), 0u) << explain(v);
  for (const char* name : {"ranks_agree", "state_roundtrip", "merge_state"})
    EXPECT_EQ(property(v, name).message.rfind(std::string(name) + " held at compute 1, 2, 3, 4, 5, 6 on all 2", 0), 0u)
        << explain(v);
}

TEST(EngineRun, ComputeEveryCatchesASyncThatOverwritesTheStateAtTheSecondRound) {
  const auto v = run("compute_every_overwrite").at(0);
  EXPECT_EQ(v.outcome, dh::Outcome::Fail) << explain(v);
  EXPECT_EQ(property(v, "equal_to_single").outcome, dh::Outcome::Pass) << explain(v);
  const auto& p = property(v, "update_after_compute");
  ASSERT_EQ(p.outcome, dh::Outcome::Fail) << explain(v);
  EXPECT_NE(p.message.find("update_after_compute failed at compute 2 of 6 (script step 3: 'update rest')"),
            std::string::npos)
      << p.message;
}

// The GoogleTest scenario fixture reports a failing variant as a test failure with the property
// messages and the reproduce command, and a variant that cannot run as a skip.
TEST(ScenarioFixture, ReportsFailuresAndSkips) {
  const auto scenario = load("no_sync");
  const auto variant = dh::expand_variants(scenario, 0).at(0);
  const auto verdict = distmetrics::fixtures::run_scenario_variant(scenario, variant);
  ASSERT_EQ(verdict.outcome, dh::Outcome::Fail);
  EXPECT_NONFATAL_FAILURE(distmetrics::fixtures::report_verdict(verdict), "equal_to_single failed at compute 1 of 4");
  EXPECT_NONFATAL_FAILURE(distmetrics::fixtures::report_verdict(verdict),
                          "reproduce: distmetrics run " + kDir + "/no_sync.toml --filter 'broken/no_sync:gloo-ws2-uneven-cpu'");
  const auto cases = distmetrics::fixtures::scenario_cases({kDir + "/no_sync.toml", kDir + "/missing.toml"});
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_FALSE(cases[0].scenario);  // the missing file: a case that fails with its diagnostic
  EXPECT_NE(cases[0].diagnostics.at(0).message.find("no such scenario file"), std::string::npos);
  EXPECT_EQ(cases[1].name, "broken_no_sync__gloo_ws2_uneven_cpu");
}

// The user-facing macro: a correct test-only metric's scenario, two variants.
namespace {
dh::Selection gloo_even_up_to_2() {
  dh::Selection s;
  s.backends = {"gloo"};
  s.world_sizes = {1, 2};
  s.shards = {"even"};
  return s;
}
}  // namespace
DISTMETRICS_SCENARIO_TESTS(CorrectMeanScenario, {kDir + "/correct_mean.toml"}, gloo_even_up_to_2());

namespace {

const dh::PropertyResult& property_of(const dh::Verdict& v, const std::string& name) {
  const auto* p = v.property(name);
  if (!p) throw std::runtime_error("no " + name + " in the verdict:\n" + explain(v));
  return *p;
}

}  // namespace

// A crash at compute 2 keeps the verdicts judged at compute 1, which every rank completed (from
// the records rank 1 sent before it aborted): equal_to_single and ranks_agree fail there, as a
// finding under the crash; the properties whose computes came later are not judged, never passed.
TEST(EngineRun, ACrashKeepsTheVerdictsJudgedOnTheStepsEveryRankCompletedBefore) {
  const auto v = run("no_sync_then_abort").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Crash) << explain(v);
  EXPECT_NE(v.reason.find("rank 1"), std::string::npos) << v.reason;
  EXPECT_EQ(failed(v), (std::vector<std::string>{"equal_to_single", "ranks_agree"})) << explain(v);
  const auto& equal = property_of(v, "equal_to_single");
  EXPECT_EQ(equal.judged_before_death, "judged on script steps 1-2 ('update 50%' .. 'compute'), which every rank completed");
  ASSERT_EQ(equal.lines.size(), 2u) << explain(v);
  EXPECT_TRUE(equal.lines[0].differs && equal.lines[1].differs) << explain(v);  // each rank's own mean
  for (const char* later : {"idempotent", "update_after_compute", "reset_replay"}) {
    const auto& p = property_of(v, later);
    EXPECT_EQ(p.outcome, dh::Outcome::Skip) << explain(v);
    EXPECT_EQ(p.judged_before_death, "not judged") << explain(v);
    EXPECT_EQ(p.message.rfind(std::string(later) + ": not judged: its evidence lies in script steps not every rank "
                              "completed; the variant's outcome is crash, and not every rank completed script step 3 "
                              "('compute')", 0), 0u) << p.message;
  }
  // An 'update empty' after the crash: not judged either.
  EXPECT_EQ(property_of(v, "accepts_empty_batch").judged_before_death, "not judged") << explain(v);
  const std::string details = v.details();
  EXPECT_NE(details.find("judged before the variant died (the steps every rank completed):\n  equal_to_single failed ("),
            std::string::npos) << details;
  EXPECT_NE(details.find("  idempotent: not judged: "), std::string::npos) << details;
  const auto json = v.to_json();
  bool saw = false;
  for (const auto& p : json.at("properties"))
    if (p.at("name") == "equal_to_single") {
      saw = true;
      EXPECT_EQ(p.at("outcome"), "fail");
      EXPECT_EQ(p.at("judged_before_death"), equal.judged_before_death);
    }
  EXPECT_TRUE(saw);
}

// A hang whose ranks' collectives parted at compute 2 (rank 1 returns it from a cache): every
// rank completed compute 2, but rank 0's value there paired its collectives with rank 1's of
// compute 3, so only compute 1's verdicts are kept (held); the rest are not judged.
TEST(EngineRun, AHangKeepsTheVerdictsThatHeldBeforeTheRanksParted) {
  const auto v = run("rank_local_cache").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Hang) << explain(v);
  ASSERT_TRUE(v.deviation) << explain(v);
  EXPECT_EQ(v.deviation->script_step, 3);
  EXPECT_EQ(failed(v), (std::vector<std::string>{"no_hang"})) << explain(v);
  const auto& equal = property_of(v, "equal_to_single");
  EXPECT_EQ(equal.outcome, dh::Outcome::Pass) << explain(v);
  EXPECT_EQ(equal.judged_before_death.rfind("judged on script steps 1-2 ", 0), 0u) << equal.judged_before_death;
  EXPECT_EQ(property_of(v, "ranks_agree").outcome, dh::Outcome::Pass) << explain(v);
  for (const char* later : {"idempotent", "update_after_compute", "reset_replay", "accepts_empty_batch"}) {
    const auto& p = property_of(v, later);
    EXPECT_EQ(p.outcome, dh::Outcome::Skip) << explain(v);
    EXPECT_NE(p.message.find("the ranks' collectives parted at script step 3 ('compute')"), std::string::npos) << p.message;
  }
}

// An error at the first update: no step every rank completed, nothing judged (and none passed).
TEST(EngineRun, AnErrorAtTheFirstStepJudgesNothing) {
  const auto v = run("rejects_when_distributed").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Error) << explain(v);
  for (const auto& p : v.properties) {
    if (p.name == "no_hang") continue;
    EXPECT_EQ(p.outcome, dh::Outcome::Skip) << explain(v);
    EXPECT_EQ(p.judged_before_death, "not judged") << explain(v);
  }
}

// [expect] error at compute 2, and the script goes on: a metric that recovers gives the single
// process's value at compute 3 on every rank.
TEST(EngineRun, AMetricThatRecoversAfterTheExpectedErrorPasses) {
  const auto v = run("recovers_after_error").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Pass) << explain(v);
  EXPECT_EQ(property_of(v, "expected_error").outcome, dh::Outcome::Pass) << explain(v);
  const auto& recovered = property_of(v, "recovers_after_error");
  EXPECT_EQ(recovered.outcome, dh::Outcome::Pass) << explain(v);
  EXPECT_EQ(recovered.message.rfind("recovers_after_error held at compute 3 on all 2 rank(s)", 0), 0u) << recovered.message;
  ASSERT_TRUE(recovered.single && recovered.single->value) << explain(v);
  ASSERT_EQ(recovered.values.size(), 2u);
  for (const auto& value : recovered.values) EXPECT_EQ(value->value, recovered.single->value) << explain(v);
}

// The peer run's raise-and-recover plan: compute 1 raises as declared and leaves every rank
// synced, so the next update() raises on every rank. That is the metric not recovering, judged
// by recovers_after_error (led by its root cause, which names the update's error), not an error
// outcome that would leave recovers_after_error unjudged.
TEST(EngineRun, AnErrorAfterTheDeclaredRaiseFailsRecoversAfterError) {
  const auto v = run("stays_synced_after_raise").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Fail) << explain(v);
  EXPECT_EQ(property_of(v, "expected_error").outcome, dh::Outcome::Pass) << explain(v);
  const auto& recovered = property_of(v, "recovers_after_error");
  ASSERT_EQ(recovered.outcome, dh::Outcome::Fail) << explain(v);
  EXPECT_NE(recovered.message.find("its script stopped at step 2 (update), raising std::logic_error: update() on a synced "
                                   "metric"),
            std::string::npos)
      << recovered.message;
  ASSERT_TRUE(v.root_cause) << explain(v);
  EXPECT_EQ(v.root_cause->property, "recovers_after_error");
  EXPECT_EQ(v.root_cause->headline,
            "compute() raised NotComputableError as declared, and left the metric broken on rank(s) 0, 1: the next "
            "update() and compute() do not give the single-process value there (the next update() raised "
            "std::logic_error on rank(s) 0, 1)");
}

// compute 1 raises another type on every rank than the single process does: expected_error fails,
// as the root cause; the script still goes on, and the computes after the update are judged
// (this metric recovers: recovers_after_error holds).
TEST(EngineRun, AnotherErrorAtTheDeclaredComputeFailsExpectedErrorAndTheScriptGoesOn) {
  const auto v = run("another_error_when_distributed").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Fail) << explain(v);
  const auto& expected = property_of(v, "expected_error");
  ASSERT_EQ(expected.outcome, dh::Outcome::Fail) << explain(v);
  EXPECT_NE(expected.message.find("std::out_of_range"), std::string::npos) << expected.message;
  const auto& recovered = property_of(v, "recovers_after_error");
  EXPECT_EQ(recovered.outcome, dh::Outcome::Pass) << explain(v);
  EXPECT_EQ(recovered.message.rfind("recovers_after_error held at compute 2, 3 on all 2 rank(s)", 0), 0u) << recovered.message;
  ASSERT_TRUE(v.root_cause) << explain(v);
  EXPECT_EQ(v.root_cause->property, "expected_error");
  EXPECT_EQ(v.root_cause->headline,
            "compute() 1 raised std::out_of_range on rank(s) 0, 1 where the single process raises NotComputableError: "
            "the distributed path reaches compute() with states the single process never has");
}

// A metric that keeps a stale cache after compute raised on every rank but 0: compute 3 differs
// on rank 1 only, and the failure names it.
TEST(EngineRun, AMetricLeftBrokenByARaisingComputeFailsNamingTheRank) {
  const auto v = run("stale_cache_after_raise").at(0);
  ASSERT_EQ(v.outcome, dh::Outcome::Fail) << explain(v);
  EXPECT_EQ(property_of(v, "expected_error").outcome, dh::Outcome::Pass) << explain(v);
  const auto& recovered = property_of(v, "recovers_after_error");
  ASSERT_EQ(recovered.outcome, dh::Outcome::Fail) << explain(v);
  ASSERT_TRUE(v.root_cause) << explain(v);
  EXPECT_EQ(v.root_cause->property, "recovers_after_error");
  EXPECT_EQ(v.root_cause->headline, "compute() raised NotComputableError as declared, and left the metric broken on rank(s) 1: "
                                    "the next update() and compute() do not give the single-process value there");
  EXPECT_NE(recovered.message.find("recovers_after_error failed at compute 3 of 3 (script step 6: 'compute')"),
            std::string::npos) << recovered.message;
  ASSERT_EQ(recovered.lines.size(), 2u) << explain(v);
  EXPECT_FALSE(recovered.lines[0].differs) << explain(v);
  EXPECT_TRUE(recovered.lines[1].differs) << explain(v);
  EXPECT_EQ(recovered.lines[1].rank, 1);
  // Rank 1 returns compute 1's value, the single process the mean of what was fed after the reset.
  ASSERT_TRUE(recovered.values.at(1) && recovered.values.at(1)->value && recovered.single && recovered.single->value);
  EXPECT_NE(*recovered.values.at(1)->value, *recovered.single->value);
  EXPECT_EQ(*recovered.values.at(0)->value, *recovered.single->value);
}
