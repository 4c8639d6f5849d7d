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
world_sizes = [1, 2, 3]
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

  explicit Case(int world_size = 2, const char* text = kScenario) {
    auto loaded = dh::load_scenario_text(text, "scenarios/core/rules.toml", "core/rules");
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

// The scenario with one compute: a rank that skips its collectives there leaves no other compute
// to tell the sides apart.
constexpr const char* kOneCompute = R"(description = "rules"
script = ["update 50%", "update rest", "compute"]
[metric]
name = "MeanAbsoluteError"
[data]
generator = "regression"
seed = 3
num_samples = 16
batch_size = 2
[variants]
world_sizes = [1, 2, 3]
)";

// What the single-process run issued in compute `compute` (0-based), as a rank's records of
// script step `step` from sequence number `first`.
std::vector<rt::CollectiveRecord> metric_sequence(const Case& c, int compute, int step, std::uint64_t first) {
  std::vector<rt::CollectiveRecord> out;
  for (const auto& entry : c.reference.collectives_at_compute.at(compute).value()) {
    rt::CollectiveRecord r;
    r.seq = first + out.size();
    r.op = entry.op;
    r.dtype = entry.dtype;
    r.shape = entry.shape;
    r.step = step;
    r.compute = compute;
    out.push_back(r);
  }
  return out;
}

// The runtime's paragraph for an even split, as far as the harness reads it, in both its
// readings: as the runtime's rules left it, and once a baseline tells the sides apart.
void set_even_split_diagnosis(rt::JobResult& run) {
  const auto split = rt::find_step_deviation(run.ranks);
  EXPECT_TRUE(split && split->blamed.empty());
  run.diagnosis = split ? "ranks split evenly over compute 1: ... " + rt::even_split_unblamed_text(*split) + " Now ..." : "";
  run.diagnosis_once_told = "ranks split evenly over compute 1: ... Now ...";
}

std::string rank_text(int rank) { return "rank " + std::to_string(rank); }

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
  two.run.diagnosis_once_told = "ranks split evenly over compute 1 (script step 2): ... Now rank 0 waits in barrier #1.";
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
  // Without a baseline the split stays even: neither side is blamed (the single-process run
  // recorded nothing here).
  Case alone;
  alone.built.single.collectives_at_compute.clear();
  alone.run = two.run;
  const auto even = alone.judge(judging::run_hung_or_crashed);
  ASSERT_TRUE(even.deviation);
  EXPECT_TRUE(even.deviation->blamed.empty());
  EXPECT_EQ(even.reason.rfind("ranks split evenly", 0), 0u) << even.reason;
  EXPECT_NE(even.diagnosis.find("neither side is blamed"), std::string::npos) << even.diagnosis;
}

TEST(JudgingRules, TheSingleProcessRunRecordsTheCollectivesOfEveryCompute) {
  Case c;
  ASSERT_EQ(c.reference.collectives_at_compute.size(), 2u);
  for (const auto& compute : c.reference.collectives_at_compute) {
    ASSERT_TRUE(compute);
    ASSERT_FALSE(compute->empty());
    EXPECT_EQ(compute->front().op, "all_reduce(sum)");
  }
  // Carried in the reference's JSON (it comes back from a child process or a helper worker), a
  // compute not recorded as null.
  auto reference = c.reference;
  reference.collectives_at_compute[1].reset();
  const auto back = dh::reference_from_json(dh::reference_to_json(reference));
  ASSERT_EQ(back.collectives_at_compute.size(), 2u);
  ASSERT_TRUE(back.collectives_at_compute[0]);
  EXPECT_FALSE(back.collectives_at_compute[1]);
  ASSERT_EQ(back.collectives_at_compute[0]->size(), c.reference.collectives_at_compute[0]->size());
  EXPECT_EQ(back.collectives_at_compute[0]->front().dtype, c.reference.collectives_at_compute[0]->front().dtype);
  EXPECT_EQ(back.collectives_at_compute[0]->front().shape, c.reference.collectives_at_compute[0]->front().shape);
  // The values are taken without a communicator, as before (compute 2 saw every sample); the
  // reference implementation's (as fed) records no collectives: they are not the metric's.
  dh::SampleIndices all(16);
  for (std::int64_t i = 0; i < 16; ++i) all[i] = i;
  EXPECT_EQ(c.reference.at_compute.at(1).to_json(),
            dh::single_process_result(c.scenario, c.data, dh::cut_batches(all, 2)).to_json());
  EXPECT_TRUE(dh::build_reference(c.scenario, c.data, c.plan.shards, c.plan.script, dh::ReferenceData::AsFed)
                  .collectives_at_compute.empty());
}

// A memo keeps the single-process runs over the same batches across variants (issue 43): the
// references are the ones built without it, and the run another variant made (compute 2 of both
// saw every sample, in the same batches) is not made again. Another scenario's key drops them.
TEST(JudgingRules, AMemoGivesTheSameReferencesWithoutRunningTheSameBatchesTwice) {
  Case two(2), three(3);
  dh::ReferenceMemo memo;
  memo.use("core/rules");
  const auto with_two = dh::build_reference(two.scenario, two.data, two.plan.shards, two.plan.script,
                                            dh::ReferenceData::Union, &memo);
  EXPECT_EQ(memo.hits, 0u);
  EXPECT_EQ(memo.runs, memo.entries.size());
  const auto runs_for_two = memo.runs;
  const auto with_three = dh::build_reference(three.scenario, three.data, three.plan.shards, three.plan.script,
                                              dh::ReferenceData::Union, &memo);
  EXPECT_GE(memo.hits, 1u);
  EXPECT_EQ(memo.runs, memo.entries.size());
  dh::ReferenceMemo alone;  // what ws3 runs with nothing kept
  alone.use("core/rules");
  (void)dh::build_reference(three.scenario, three.data, three.plan.shards, three.plan.script,
                            dh::ReferenceData::Union, &alone);
  EXPECT_EQ(alone.hits, 0u);
  EXPECT_EQ(memo.runs - runs_for_two, alone.runs - memo.hits);  // each run kept from ws2 not made again
  EXPECT_EQ(dh::reference_to_json(with_two), dh::reference_to_json(two.reference));
  EXPECT_EQ(dh::reference_to_json(with_three), dh::reference_to_json(three.reference));
  memo.use("core/rules");
  EXPECT_FALSE(memo.entries.empty());
  memo.use("core/another");
  EXPECT_TRUE(memo.entries.empty());
}

TEST(JudgingRules, TheBaselinesOfAnEvenSplitAreTriedInOrder) {
  std::vector<std::string> names;
  for (const auto& baseline : judging::baselines_of_even_splits()) names.push_back(baseline.name);
  EXPECT_EQ(names, (std::vector<std::string>{"another variant of the scenario whose ranks agreed", "the single-process run"}));
}

// World size 2: one rank issues a barrier after its sync in compute 1, and waits in it while its
// peer's compute 2 collectives wait for a partner; no other compute tells the sides apart and no
// other variant ran. The single-process run issued only the sync there: whichever rank added the
// barrier is blamed, and the verdict names the single-process run.
TEST(JudgingRules, AnExtraCollectiveOnEitherRankIsBlamedByTheSingleProcessRun) {
  for (int deviant : {0, 1}) {
    Case c;
    const int other = 1 - deviant;
    const auto compute1 = metric_sequence(c, 0, 1, 0);
    const std::uint64_t n = compute1.size();
    c.run.status = rt::RunStatus::Hang;
    c.run.ranks[deviant].state = rt::RankState::TimedOut;
    c.run.ranks[deviant].trace = compute1;
    c.run.ranks[deviant].blocked_in = collective(n, "barrier", 1, 0);
    c.run.ranks[other].state = rt::RankState::TimedOut;
    c.run.ranks[other].trace = compute1;
    c.run.ranks[other].blocked_in = metric_sequence(c, 1, 3, n).front();
    set_even_split_diagnosis(c.run);
    const auto v = c.judge(judging::run_hung_or_crashed);
    ASSERT_TRUE(v.deviation);
    EXPECT_EQ(v.deviation->blamed, (std::vector<int>{deviant}));
    const std::string expected = rank_text(deviant) + " to blame: " + rank_text(deviant) +
                                 " deviated from the metric's sequence in compute 1 (script step 2): in the single-process "
                                 "run (the same metric in one process, on all the data), compute 1 (script step 2) issued all_reduce(sum) (";
    EXPECT_EQ(v.reason.rfind(expected, 0), 0u) << v.reason;
    EXPECT_NE(v.reason.find(", as " + rank_text(other) + " did here; " + rank_text(deviant) + " issued barrier #" +
                            std::to_string(n) + " there, which " + rank_text(other) +
                            " never issued (the ranks split evenly: the single-process run is the baseline)."),
              std::string::npos)
        << v.reason;
    EXPECT_EQ(v.diagnosis.find("neither side is blamed"), std::string::npos) << v.diagnosis;
    EXPECT_NE(v.diagnosis.find("ranks split evenly over compute 1: ... Now ..."), std::string::npos) << v.diagnosis;
  }
}

// World size 2, one compute: one rank passes it without the sync its peer waits in.
TEST(JudgingRules, ASkippedCollectiveOnEitherRankIsBlamedByTheSingleProcessRun) {
  for (int deviant : {0, 1}) {
    Case c(2, kOneCompute);
    const int other = 1 - deviant;
    const auto sync = metric_sequence(c, 0, 2, 0);
    c.run.status = rt::RunStatus::Hang;
    c.run.ranks[deviant].state = rt::RankState::Finished;
    c.run.ranks[deviant].trace.clear();
    c.run.ranks[other].state = rt::RankState::TimedOut;
    c.run.ranks[other].trace.clear();
    c.run.ranks[other].blocked_in = sync.front();
    set_even_split_diagnosis(c.run);
    const auto v = c.judge(judging::run_hung_or_crashed);
    ASSERT_TRUE(v.deviation);
    EXPECT_EQ(v.deviation->blamed, (std::vector<int>{deviant}));
    EXPECT_EQ(v.reason.rfind(rank_text(deviant) + " to blame: " + rank_text(deviant) +
                                 " deviated from the metric's sequence in compute 1 (script step 3): in the single-process run",
                             0),
              0u)
        << v.reason;
    EXPECT_NE(v.reason.find(rank_text(deviant) + " passed it without " + sync.front().describe() + ", which " +
                            rank_text(other) + " issued (the ranks split evenly: the single-process run is the baseline)."),
              std::string::npos)
        << v.reason;
    EXPECT_EQ(v.diagnosis.find("neither side is blamed"), std::string::npos) << v.diagnosis;
  }
}

// World size 2: one rank gathers where its peer reduces, at the same sequence number of compute 1.
// The runtime's tie-break (the rank without rank 0's collective) is overruled by the single-process
// run, which reduces there.
TEST(JudgingRules, AMismatchedCollectiveOnEitherRankIsBlamedByTheSingleProcessRun) {
  for (int deviant : {0, 1}) {
    Case c;
    const int other = 1 - deviant;
    const auto sync = metric_sequence(c, 0, 1, 0);
    rt::CollectiveRecord gather = collective(0, "all_gather(shapes)", 1, 0);
    gather.dtype = "int64";
    gather.shape = {5};
    c.run.status = rt::RunStatus::Hang;
    c.run.ranks[deviant].state = rt::RankState::TimedOut;
    c.run.ranks[deviant].trace = {gather};  // a trace holds the collective its rank is blocked in
    c.run.ranks[deviant].blocked_in = gather;
    c.run.ranks[other].state = rt::RankState::TimedOut;
    c.run.ranks[other].trace = {sync.front()};
    c.run.ranks[other].blocked_in = sync.front();
    ASSERT_FALSE(rt::find_step_deviation(c.run.ranks));
    const auto mismatch = rt::find_collective_mismatch(c.run.ranks);
    ASSERT_TRUE(mismatch && mismatch->tie());
    EXPECT_EQ(mismatch->blamed(), 1);  // by the ranks' order alone
    c.run.blamed_rank = 1;
    c.run.diagnosis = "ranks disagree at #0: ... " + rt::mismatch_blame_text(*mismatch) + " Every rank must issue ...";
    c.run.diagnosis_once_told = "ranks disagree at #0: ... Every rank must issue ...";
    const auto v = c.judge(judging::run_hung_or_crashed);
    EXPECT_FALSE(v.deviation);  // no step parted: a mismatch has no deviation record
    EXPECT_EQ(v.reason.rfind(rank_text(deviant) + " to blame: " + rank_text(deviant) +
                                 " deviated from the metric's sequence in compute 1 (script step 2): in the single-process run",
                             0),
              0u)
        << v.reason;
    EXPECT_NE(v.reason.find(rank_text(deviant) + " issued all_gather(shapes) #0 (int64 [5]) where " + rank_text(other) +
                            " issued " + sync.front().describe() +
                            " (the ranks split evenly: the single-process run is the baseline)."),
              std::string::npos)
        << v.reason;
    EXPECT_EQ(v.diagnosis.find(rt::mismatch_blame_text(*mismatch)), std::string::npos) << v.diagnosis;
    EXPECT_NE(v.diagnosis.find("ranks disagree at #0: ... Every rank must issue ..."), std::string::npos) << v.diagnosis;
  }
}

// A blame the runtime decided (the fewer ranks, the pattern of the other computes, the smaller
// group of a mismatch) stays as it was, even where the single-process run would say otherwise;
// so does an even split that no baseline tells apart (nothing recorded, or a repeated compute).
TEST(JudgingRules, ABlameTheRuntimeDecidedOrNoBaselineTellsIsLeftAsItWas) {
  // World size 3: rank 2 alone issued a barrier in compute 1 (the fewer ranks), though the
  // single-process run is made to show one there too.
  Case uneven(3);
  const auto compute1 = metric_sequence(uneven, 0, 1, 0);
  const std::uint64_t n = compute1.size();
  uneven.built.single.collectives_at_compute[0]->push_back(dh::TraceEntry{n, "barrier", "", {}, 0, ""});
  uneven.run.status = rt::RunStatus::Hang;
  for (int r = 0; r < 3; ++r) {
    uneven.run.ranks[r].state = rt::RankState::TimedOut;
    uneven.run.ranks[r].trace = compute1;
    uneven.run.ranks[r].blocked_in = r == 2 ? collective(n, "barrier", 1, 0) : metric_sequence(uneven, 1, 3, n).front();
  }
  const auto split = rt::find_step_deviation(uneven.run.ranks);
  ASSERT_TRUE(split);
  EXPECT_EQ(split->blamed, (std::vector<int>{2}));
  uneven.run.blamed_rank = 2;
  uneven.run.diagnosis = "rank 2 issued barrier #2 in compute 1 (script step 2), which ranks 0, 1 never issued. Rank 2 is blamed: the fewer ranks.";
  auto v = uneven.judge(judging::run_hung_or_crashed);
  EXPECT_EQ(v.reason, "rank 2 to blame: " + uneven.run.diagnosis);
  ASSERT_TRUE(v.deviation);
  EXPECT_EQ(v.deviation->blamed, (std::vector<int>{2}));

  // A mismatch of 2 against 1: the smaller group, as the runtime said.
  Case minority(3);
  for (int r = 0; r < 3; ++r) {
    minority.run.ranks[r].state = rt::RankState::TimedOut;
    minority.run.ranks[r].blocked_in = r == 0 ? collective(0, "barrier", 1, 0) : metric_sequence(minority, 0, 1, 0).front();
    minority.run.ranks[r].trace = {*minority.run.ranks[r].blocked_in};
  }
  minority.run.status = rt::RunStatus::Hang;
  const auto mismatch = rt::find_collective_mismatch(minority.run.ranks);
  ASSERT_TRUE(mismatch && !mismatch->tie());
  minority.run.blamed_rank = 0;
  minority.run.diagnosis = "ranks disagree at #0: ... " + rt::mismatch_blame_text(*mismatch);
  v = minority.judge(judging::run_hung_or_crashed);
  EXPECT_EQ(v.reason, "rank 0 to blame: " + minority.run.diagnosis);

  // The even split of the extra barrier, with nothing recorded by the single-process run.
  Case unrecorded;
  unrecorded.built.single.collectives_at_compute.clear();
  unrecorded.run.status = rt::RunStatus::Hang;
  for (int r = 0; r < 2; ++r) {
    unrecorded.run.ranks[r].state = rt::RankState::TimedOut;
    unrecorded.run.ranks[r].trace = compute1;
  }
  unrecorded.run.ranks[1].blocked_in = collective(n, "barrier", 1, 0);
  unrecorded.run.ranks[0].blocked_in = metric_sequence(unrecorded, 1, 3, n).front();
  set_even_split_diagnosis(unrecorded.run);
  v = unrecorded.judge(judging::run_hung_or_crashed);
  ASSERT_TRUE(v.deviation);
  EXPECT_TRUE(v.deviation->blamed.empty());
  EXPECT_EQ(v.reason.rfind("ranks split evenly", 0), 0u) << v.reason;
  EXPECT_NE(v.diagnosis.find("neither side is blamed"), std::string::npos) << v.diagnosis;

  // A metric whose number of collectives follows its data (one gather per element, torchmetrics
  // #3336): the single-process run, on all the data, gathers more than either side. Rank 0 passed
  // compute 1 with 4 gathers, rank 1 with 2: the baseline's 6 are neither side's.
  Case per_element;
  std::vector<rt::CollectiveRecord> rank0, rank1;
  for (std::uint64_t s = 0; s < 4; ++s) rank0.push_back(collective(s, "all_gather", 1, 0));
  for (std::uint64_t s = 0; s < 4; ++s) rank1.push_back(collective(s, "all_gather", 1 + 2 * (s / 2), s / 2));
  per_element.built.single.collectives_at_compute[0] = std::vector<dh::TraceEntry>(6, dh::TraceEntry{0, "all_gather", "float64", {3}, 0, ""});
  per_element.run.status = rt::RunStatus::Hang;
  per_element.run.ranks[0].state = rt::RankState::TimedOut;
  per_element.run.ranks[0].trace = rank0;
  per_element.run.ranks[0].blocked_in = collective(4, "barrier", 3, 1);
  per_element.run.ranks[1].state = rt::RankState::Finished;
  per_element.run.ranks[1].trace = rank1;
  set_even_split_diagnosis(per_element.run);
  v = per_element.judge(judging::run_hung_or_crashed);
  ASSERT_TRUE(v.deviation);
  EXPECT_EQ(v.deviation->more, (std::vector<int>{0}));
  EXPECT_TRUE(v.deviation->blamed.empty()) << v.reason;

  // A compute right after another: a fresh single-process instance does not say what a repeat
  // issues (a metric may return its cached value there without syncing).
  Case repeat(2, R"(description = "rules"
script = ["update rest", "compute", "compute"]
[metric]
name = "MeanAbsoluteError"
[data]
generator = "regression"
seed = 3
num_samples = 16
batch_size = 2
[variants]
world_sizes = [2]
)");
  // Compute 1 agreed on a broadcast (no pattern for either side); in compute 2 rank 0 returned
  // without a collective while rank 1 synced as the single-process run's fresh instance does.
  const std::vector<rt::CollectiveRecord> first = {collective(0, "broadcast(root=0)", 1, 0)};
  const auto second = metric_sequence(repeat, 1, 2, first.size());
  repeat.run.status = rt::RunStatus::Hang;
  repeat.run.ranks[0].state = rt::RankState::Finished;
  repeat.run.ranks[0].trace = first;
  repeat.run.ranks[1].state = rt::RankState::TimedOut;
  repeat.run.ranks[1].trace = first;
  repeat.run.ranks[1].blocked_in = second.front();
  set_even_split_diagnosis(repeat.run);
  v = repeat.judge(judging::run_hung_or_crashed);
  ASSERT_TRUE(v.deviation);
  EXPECT_EQ(v.deviation->compute, 2);
  EXPECT_TRUE(v.deviation->blamed.empty()) << v.reason;
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
  waited.error->wait_timed_out = true;  // as step_error() records a wait that gave up
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
