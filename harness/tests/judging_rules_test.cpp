// The rules that decide a verdict (harness/src/judging/), each on its own: a run's result as the
// runtime gives it (rank states, traces, the runtime's blame), the ranks' observations, and the
// single-process reference the engine builds (here in this process, on the scenario's data).
#include <gtest/gtest.h>

#include "distmetrics/harness/engine.h"
#include "distmetrics/harness/internal/blame.h"
#include "distmetrics/harness/internal/judging.h"
#include "distmetrics/harness/scenario.h"
#include "distmetrics/runtime/desync.h"
#include "distmetrics/runtime/errors.h"

namespace dh = distmetrics::harness;
namespace judging = distmetrics::harness::judging;
namespace rt = distmetrics::runtime;
using nlohmann::json;

namespace {

constexpr const char* kScenario = R"(description = "rules"
script = ["update 50%", "compute", "update rest", "compute"]
[metric]
name = "MeanAbsoluteError"
[data]
generator = "regression"
seed = 3
num_samples = 16
batch_size = 2
[variants]
world_sizes = [1, 2]
)";

rt::CollectiveRecord collective(std::uint64_t seq, const std::string& op, int step, int compute) {
  rt::CollectiveRecord r;
  r.seq = seq;
  r.op = op;
  r.dtype = op == "barrier" ? "" : "float64";
  if (op != "barrier") r.shape = {2};
  r.step = step;
  r.compute = compute;
  return r;
}

// One variant of the scenario, planned and with its single-process reference, and a run of it.
struct Case {
  dh::Scenario scenario;
  dh::Variant variant;
  dh::Dataset data;
  dh::VariantPlan plan;
  dh::SingleProcessReference reference;
  rt::JobResult run;
  bool planned = true;
  judging::ReferenceBuilt built;
  std::vector<dh::PropertyResult> extra;
  judging::Baselines baselines;

  explicit Case(int world_size = 2) {
    auto loaded = dh::load_scenario_text(kScenario, "scenarios/core/rules.toml", "core/rules");
    EXPECT_TRUE(loaded.diagnostics.empty()) << loaded.diagnostics.front().to_string();
    scenario = std::move(*loaded.scenario);
    for (const auto& v : dh::expand_variants(scenario, 0))
      if (v.world_size == world_size && v.backend == "gloo") variant = v;
    data = dh::generate_data(scenario.data);
    plan = dh::plan_variant(scenario, data, variant.shard, world_size);
    reference = dh::build_reference(scenario, data, plan.shards, plan.script);
    built.single = reference;
    run.seconds = 1.0;
    for (int r = 0; r < world_size; ++r) {
      rt::RankOutcome rank;
      rank.rank = r;
      rank.trace = {collective(0, "all_reduce(sum)", 1, 0), collective(1, "all_reduce(sum)", 3, 1)};
      rank.result = observation(r).to_json();
      run.ranks.push_back(rank);
    }
  }
  // What a correct metric's rank returns: the single process's result at every compute.
  dh::RankObservation observation(int rank) const {
    dh::RankObservation o;
    o.rank = rank;
    o.samples = plan.shards.samples_of(rank);
    o.batches = static_cast<std::int64_t>(plan.shards.batches_of(rank));
    for (const auto& point : plan.script.computes) {
      dh::ComputeRecord c;
      c.index = point.index;
      c.step = point.step;
      c.result = reference.at_compute.at(point.index);
      o.computes.push_back(c);
    }
    return o;
  }
  void observe(int rank, const dh::RankObservation& o) { run.ranks.at(rank).result = o.to_json(); }
  dh::Verdict judge(bool (*only)(judging::Judging&) = nullptr) {
    judging::Judging j(scenario, variant, run, 10.0);
    if (planned) {
      j.data = &data;
      j.plan = &plan;
    } else {
      j.plan_error = "not enough memory for the data";
    }
    j.build_reference = [this] { return built; };
    j.elapsed = [] { return 0.5; };
    j.baselines = &baselines;
    if (!extra.empty()) j.extra_checks = [this](const dh::CheckContext&) { return extra; };
    if (!only) {
      auto v = judging::judge(j);
      baselines.record(j);
      return v;
    }
    j.verdict.variant = variant;
    only(j);
    return j.verdict;
  }
};

const dh::PropertyResult* no_hang(const dh::Verdict& v) { return v.property("no_hang"); }

}  // namespace

TEST(JudgingRules, AreTriedInOrderAndACorrectRunPasses) {
  std::vector<std::string> names;
  for (const auto& rule : judging::rules()) names.push_back(rule.name);
  EXPECT_EQ(names.front(), "a rank past its memory limit");
  EXPECT_EQ(names.back(), "a property failed");
  Case c;
  const auto v = c.judge();
  EXPECT_EQ(v.outcome, dh::Outcome::Pass) << v.reason;
  ASSERT_FALSE(v.properties.empty());
  EXPECT_EQ(v.properties.front().name, "no_hang");
  EXPECT_EQ(v.shards.size(), 2u);
  EXPECT_EQ(v.shards[0].samples + v.shards[1].samples, 16);
}

TEST(JudgingRules, ARankPastItsMemoryIsBlamedWhateverItsPeersDid) {
  Case c;
  c.run.status = rt::RunStatus::Hang;
  c.run.ranks[1].state = rt::RankState::Raised;
  c.run.ranks[1].error_type = rt::kRankMemoryExceeded;
  c.run.ranks[1].error = "rank 1 went past its memory limit of 1 GiB (1.2 GiB mapped)";
  c.run.ranks[0].state = rt::RankState::TimedOut;
  const auto v = c.judge(judging::rank_past_its_memory);
  EXPECT_EQ(v.outcome, dh::Outcome::MemoryExceeded);
  EXPECT_EQ(v.reason, "rank 1 to blame: rank 1 went past its memory limit of 1 GiB (1.2 GiB mapped)");
  EXPECT_NE(v.diagnosis.find("The limit is per rank (--rank-memory GIB"), std::string::npos) << v.diagnosis;
  ASSERT_TRUE(no_hang(v));
  EXPECT_EQ(no_hang(v)->outcome, dh::Outcome::Fail);
  Case fine;
  judging::Judging j(fine.scenario, fine.variant, fine.run, 10.0);
  EXPECT_FALSE(judging::rank_past_its_memory(j));
}

TEST(JudgingRules, AMetricThatSaysUnsupportedMakesASkipUnlessARankCrashed) {
  Case c;
  auto o = c.observation(1);
  o.computes.clear();
  o.error = dh::StepError(-1, "setup", dh::kUnsupportedType, "average='weighted' needs class counts\nmore");
  c.observe(1, o);
  auto v = c.judge(judging::metric_does_not_support_it);
  EXPECT_EQ(v.outcome, dh::Outcome::Skip);
  EXPECT_EQ(v.reason, "MeanAbsoluteError does not support this: average='weighted' needs class counts (rank 1, setup)");
  c.run.status = rt::RunStatus::Crash;
  v = c.judge(judging::metric_does_not_support_it);
  EXPECT_EQ(v.outcome, dh::Outcome::Pass);  // not decided here
}

TEST(JudgingRules, ARankThatRaisedAloneWhileItsPeerWaitedIsTheHangsBlame) {
  Case c;
  c.run.status = rt::RunStatus::Hang;
  auto o = c.observation(0);
  o.computes.resize(0);
  o.error = dh::StepError(1, "compute", "NotComputableError", "no samples on this rank");
  c.observe(0, o);
  c.run.ranks[0].trace.clear();
  c.run.ranks[1].state = rt::RankState::TimedOut;
  c.run.ranks[1].trace = {collective(0, "all_reduce(sum)", 1, 0)};
  c.run.ranks[1].blocked_in = c.run.ranks[1].trace.front();
  c.run.blamed_rank = 0;  // as the runtime's diagnosis says
  c.run.diagnosis = "rank 0 never entered all_reduce(sum) #0 (float64 [2]) that rank 1 was waiting in";
  const auto v = c.judge();  // the rules before it do not decide
  EXPECT_EQ(v.outcome, dh::Outcome::Hang);
  EXPECT_EQ(v.reason.rfind("rank 0 to blame: rank 0 raised NotComputableError at compute (script step 2): no samples", 0), 0u)
      << v.reason;
  EXPECT_NE(v.diagnosis.find(judging::kRaiseTogether), std::string::npos) << v.diagnosis;
  EXPECT_NE(v.diagnosis.find(c.run.diagnosis), std::string::npos) << v.diagnosis;
  EXPECT_NE(v.diagnosis.find("shards: rank 0 "), std::string::npos) << v.diagnosis;
  // A crash: the runtime's blame and its paragraph's first line.
  Case crash;
  crash.run.status = rt::RunStatus::Crash;
  crash.run.ranks[1].state = rt::RankState::Crashed;
  crash.run.ranks[1].how_died = "killed by signal 11 (SIGSEGV)";
  crash.run.blamed_rank = 1;
  crash.run.diagnosis = "rank 1 crashed (killed by signal 11 (SIGSEGV)) after 2 collectives.";
  const auto crashed = crash.judge(judging::run_hung_or_crashed);
  EXPECT_EQ(crashed.outcome, dh::Outcome::Crash);
  EXPECT_EQ(crashed.reason, "rank 1 to blame: " + crash.run.diagnosis);
}

// World size 2, one rank issued a barrier in the first compute that the other never did: as
// many ranks on each side, and no other compute tells them apart. The same scenario's world
// size 1 variant, whose ranks agreed, issued no barrier there: the rank that did deviated.
TEST(JudgingRules, AnEvenSplitIsBlamedOnTheSideTheScenariosOtherVariantsDoNotShow) {
  Case one(1);
  one.run.ranks[0].trace = {collective(0, "all_reduce(sum)", 1, 0), collective(1, "all_reduce(sum)", 3, 1)};
  EXPECT_EQ(one.judge().outcome, dh::Outcome::Pass);
  Case two;
  two.baselines = std::move(one.baselines);
  two.run.status = rt::RunStatus::Hang;
  two.run.ranks[0].state = rt::RankState::TimedOut;
  two.run.ranks[0].trace = {collective(0, "all_reduce(sum)", 1, 0)};
  two.run.ranks[0].blocked_in = collective(1, "barrier", 1, 0);
  two.run.ranks[1].trace = {collective(0, "all_reduce(sum)", 1, 0), collective(1, "all_reduce(sum)", 3, 1)};
  const auto split = rt::find_step_deviation(two.run.ranks);
  ASSERT_TRUE(split);
  two.run.diagnosis = "ranks split evenly over compute 1 (script step 2): ... " + rt::even_split_unblamed_text(*split) +
                      " Now rank 0 waits in barrier #1.";
  const auto v = two.judge(judging::run_hung_or_crashed);
  ASSERT_TRUE(v.deviation);
  EXPECT_EQ(v.deviation->blamed, (std::vector<int>{0}));
  EXPECT_EQ(v.reason.rfind("rank 0 to blame: rank 0 deviated from the metric's sequence in compute 1 (script step 2): in "
                           "core/rules:gloo-ws1-even-cpu (world size 1)",
                           0),
            0u)
      << v.reason;
  EXPECT_NE(v.diagnosis.find("issued barrier #1 there, which rank 1 never issued"), std::string::npos) << v.diagnosis;
  // The runtime's "neither side is blamed" is overruled by the baseline; the rest of its words stay.
  EXPECT_EQ(v.diagnosis.find("neither side is blamed"), std::string::npos) << v.diagnosis;
  EXPECT_NE(v.diagnosis.find("ranks split evenly over compute 1 (script step 2): ... Now rank 0 waits in barrier #1."),
            std::string::npos)
      << v.diagnosis;
  // Without a baseline the split stays even: neither side is blamed.
  Case alone;
  alone.run = two.run;
  const auto even = alone.judge(judging::run_hung_or_crashed);
  ASSERT_TRUE(even.deviation);
  EXPECT_TRUE(even.deviation->blamed.empty());
  EXPECT_EQ(even.reason.rfind("ranks split evenly", 0), 0u) << even.reason;
  EXPECT_NE(even.diagnosis.find("neither side is blamed"), std::string::npos) << even.diagnosis;
}

TEST(JudgingRules, ARankThatDidNotReportIsAnError) {
  Case c;
  c.run.status = rt::RunStatus::Error;
  c.run.ranks[1].state = rt::RankState::Raised;
  c.run.ranks[1].error_type = "RuntimeError";
  c.run.ranks[1].error = "the task raised outside the metric\nsecond line";
  auto v = c.judge(judging::ranks_did_not_all_report);
  EXPECT_EQ(v.outcome, dh::Outcome::Error);
  EXPECT_EQ(v.reason, "rank 1 raised: RuntimeError: the task raised outside the metric");
  Case unread;
  unread.run.ranks[0].result = {{"rank", "zero"}};
  v = unread.judge(judging::ranks_did_not_all_report);
  EXPECT_EQ(v.outcome, dh::Outcome::Error);
  EXPECT_EQ(v.reason.rfind("rank 0 returned an unreadable observation: ", 0), 0u) << v.reason;
}

TEST(JudgingRules, AWaitThatGaveUpAfterAPeerRaisedIsAHangBlamedOnThatPeer) {
  Case c;
  auto raised = c.observation(0);
  raised.error = dh::StepError(3, "compute", "NotComputableError", "no samples");
  raised.error->at = 1000.0;
  auto waited = c.observation(1);
  waited.error = dh::StepError(3, "compute", "Error", "Operation timed out!");
  waited.error->at = 1001.0;
  c.observe(0, raised);
  c.observe(1, waited);
  judging::Judging j(c.scenario, c.variant, c.run, 10.0);
  ASSERT_FALSE(judging::ranks_did_not_all_report(j));
  ASSERT_TRUE(judging::a_wait_was_abandoned(j));
  EXPECT_EQ(j.verdict.outcome, dh::Outcome::Hang);
  EXPECT_EQ(j.verdict.reason.rfind("rank 0 to blame: rank 0 raised NotComputableError at compute (script step 4)", 0), 0u);
  ASSERT_TRUE(no_hang(j.verdict));
  EXPECT_EQ(no_hang(j.verdict)->message, "no_hang failed: rank 0 left the collective rank 1 waits in (detected after 1 s)");
}

TEST(JudgingRules, ASupervisorThatCannotPlanIsAnError) {
  Case c;
  c.planned = false;
  const auto v = c.judge(judging::supervisor_could_not_plan);
  EXPECT_EQ(v.outcome, dh::Outcome::Error);
  EXPECT_EQ(v.reason,
            "the supervisor could not plan the variant (its data, shards and script): not enough memory for the data");
}

TEST(JudgingRules, AReferencePastTheDeadlineIsAHangAndOneThatFailedAnError) {
  Case c;
  c.built.timed_out = true;
  c.built.left = "the variant's deadline of 10 s (it ran beside the ranks, which took 1 s)";
  auto v = c.judge(judging::reference_did_not_build);
  EXPECT_EQ(v.outcome, dh::Outcome::Hang);
  EXPECT_EQ(v.reason, "the single-process reference did not finish within " + c.built.left);
  EXPECT_EQ(no_hang(v)->message, "no_hang failed: " + v.reason);
  Case failed;
  failed.built.single.failure = "update raised InputError: target has 3 columns\nat ...";
  v = failed.judge(judging::reference_did_not_build);
  EXPECT_EQ(v.outcome, dh::Outcome::Error);
  EXPECT_EQ(v.reason, "the single-process reference failed: update raised InputError: target has 3 columns");
  EXPECT_NE(v.diagnosis.find("`distmetrics validate` checks a few samples"), std::string::npos) << v.diagnosis;
}

TEST(JudgingRules, ACheckPastTheDeadlineMakesTheVerdictAHang) {
  Case c;
  dh::PropertyResult late;
  late.name = "agrees_with_reference";
  late.outcome = dh::Outcome::Hang;
  late.message = "agrees_with_reference: the reference implementation did not finish within the variant's deadline";
  c.extra = {late};
  judging::Judging j(c.scenario, c.variant, c.run, 10.0);
  j.data = &c.data;
  j.plan = &c.plan;
  j.single = c.reference;
  j.elapsed = [] { return 0.5; };
  j.extra_checks = [&](const dh::CheckContext&) { return c.extra; };
  ASSERT_FALSE(judging::ranks_did_not_all_report(j));
  ASSERT_TRUE(judging::a_check_ran_past_the_deadline(j));
  EXPECT_EQ(j.verdict.outcome, dh::Outcome::Hang);
  EXPECT_EQ(j.verdict.reason, late.message);
  EXPECT_EQ(j.verdict.properties.front().name, "no_hang");
  EXPECT_EQ(j.verdict.properties.front().message, "no_hang failed: " + late.message);
}

TEST(JudgingRules, ARankThatRaisedWhatTheSingleProcessDidNotIsAnError) {
  Case c;
  auto o = c.observation(1);
  o.computes.clear();
  o.error = dh::StepError(0, "update", "ValueError", "target and input differ in length");
  c.observe(1, o);
  judging::Judging j(c.scenario, c.variant, c.run, 10.0);
  j.plan = &c.plan;
  j.single = c.reference;
  ASSERT_FALSE(judging::ranks_did_not_all_report(j));
  ASSERT_TRUE(judging::metric_raised(j));
  EXPECT_EQ(j.verdict.outcome, dh::Outcome::Error);
  EXPECT_EQ(j.verdict.reason, "rank 1 raised ValueError at update (script step 1): target and input differ in length");
  EXPECT_NE(j.verdict.diagnosis.find("  rank 0: finished its script"), std::string::npos) << j.verdict.diagnosis;
}

TEST(JudgingRules, AFailedPropertyLeadsWithItsRootCauseAndTheShards) {
  Case c;
  for (int r = 0; r < 2; ++r) {  // each rank returns its own value: no sync
    auto o = c.observation(r);
    for (auto& compute : o.computes) compute.result.value = 0.25 + r;
    c.observe(r, o);
  }
  const auto v = c.judge();
  EXPECT_EQ(v.outcome, dh::Outcome::Fail);
  ASSERT_TRUE(v.root_cause);
  EXPECT_EQ(v.root_cause->property, "equal_to_single");
  EXPECT_EQ(v.reason, "root cause: " + v.root_cause->headline);
  const auto* lead = v.property("equal_to_single");
  ASSERT_TRUE(lead);
  EXPECT_EQ(lead->shard_line.rfind("shards: rank 0 ", 0), 0u) << lead->shard_line;
  EXPECT_NE(lead->full_message().find("\n  reproduce: "), std::string::npos);
}
