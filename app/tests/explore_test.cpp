// explore's engine-side parts against the loader (harness/explore.h): the TOML writer gives back
// the scenario the loader built, generated cases are scenario files the loader accepts, the
// same (seed, index) draws the same case, and signatures read real verdict fields.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <tuple>

#include "distmetrics/harness/explore.h"
#include "distmetrics/harness/explorer.h"
#include "distmetrics/harness/scenario_files.h"

namespace ex = distmetrics::harness::explore;
using distmetrics::harness::Scenario;
using nlohmann::json;

namespace {

std::vector<Scenario> core_scenarios() {
  auto loaded = distmetrics::harness::load_scenarios({std::string(DISTMETRICS_SCENARIO_ROOT) + "/core"});
  EXPECT_TRUE(loaded.diagnostics.empty());
  std::vector<Scenario> out;
  for (auto& s : loaded.scenarios)
    if (!s.data.generator.empty() && !s.names_python()) out.push_back(std::move(s));
  return out;
}

// What the writer leaves out (explore's cases have none of these) and where a file came from.
json comparable(Scenario s) {
  s.golden.reset();
  s.expect = {};
  s.reference.reset();
  s.batch_invariant_sizes.clear();
  s.name.clear();
  s.file.clear();
  return s.to_json();
}

const Scenario* find(const std::vector<Scenario>& all, const std::string& name) {
  for (const auto& s : all)
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace

TEST(ExploreToml, EveryCoreScenarioWrittenBackLoadsAsTheSameScenario) {
  const auto scenarios = core_scenarios();
  ASSERT_GT(scenarios.size(), 20u);
  int compared = 0;
  for (const auto& s : scenarios) {
    if (s.golden || !s.expect.error.empty() || !s.expect.fail.empty()) continue;  // not written back
    const std::string toml = ex::scenario_to_toml(s, {"a header"}, true);
    std::string why;
    const auto back = ex::load_case(toml, s.name, &why);
    ASSERT_TRUE(back) << s.name << ": " << why << "\n" << toml;
    EXPECT_EQ(comparable(*back), comparable(s)) << s.name << "\n" << toml;
    ++compared;
  }
  EXPECT_GE(compared, 15);
}

TEST(ExploreSpace, CasesAreScenarioFilesTheLoaderAcceptsAndTheSeedReproducesThem) {
  const auto scenarios = core_scenarios();
  ex::Space space;
  space.world_sizes = {1, 2, 3, 5, 8};
  for (const char* name : {"core/mean_absolute_error", "core/accuracy_multiclass", "core/roc_auc", "core/precision_macro"}) {
    const Scenario* base = find(scenarios, name);
    ASSERT_TRUE(base) << name;
    int loaded = 0;
    std::set<std::string> texts;
    std::set<int> sizes;
    for (std::uint64_t i = 0; i < 60; ++i) {
      const ex::Case c = ex::generate_case(*base, space, 7, i);
      const std::string toml = ex::scenario_to_toml(c.scenario, {}, false);
      EXPECT_EQ(toml, ex::scenario_to_toml(ex::generate_case(*base, space, 7, i).scenario, {}, false));
      texts.insert(toml);
      if (const auto s = ex::load_case(toml, "case")) {
        ++loaded;
        ASSERT_EQ(s->world_sizes.size(), 1u);
        sizes.insert(s->world_sizes.front());
        EXPECT_NE(std::find(space.world_sizes.begin(), space.world_sizes.end(), s->world_sizes.front()), space.world_sizes.end());
        EXPECT_EQ(s->shards.size(), 1u);
        EXPECT_NE(s->shards.front(), "padded");
      }
    }
    EXPECT_EQ(texts.size(), 60u) << name;       // no two cases alike
    EXPECT_GE(loaded, 30) << name;             // most draws are valid scenarios
    EXPECT_GE(sizes.size(), 4u) << name;
    // Another seed, other cases.
    EXPECT_NE(ex::scenario_to_toml(ex::generate_case(*base, space, 8, 0).scenario, {}, false),
              ex::scenario_to_toml(ex::generate_case(*base, space, 7, 0).scenario, {}, false));
  }
}

TEST(ExploreShrink, CandidatesAreSmallerDeterministicAndStartWithFewerRanks) {
  const auto scenarios = core_scenarios();
  const Scenario* base = find(scenarios, "core/mean_absolute_error");
  ASSERT_TRUE(base);
  ex::Space space;
  space.world_sizes = {6};
  auto c = ex::generate_case(*base, space, 3, 0).scenario;
  c.data.num_samples = 100;
  c.batch_size = 3;
  c.shards = {"even"};  // a policy that needs no more than one rank
  const auto toml = ex::scenario_to_toml(c, {}, false);
  const auto s = ex::load_case(toml, "case");
  ASSERT_TRUE(s) << toml;
  const auto candidates = ex::shrink_candidates(*s);
  ASSERT_FALSE(candidates.empty());
  EXPECT_EQ(candidates.front().world_sizes, std::vector<int>{1});  // the smallest world size first
  std::vector<int> ranks;
  for (const auto& cand : candidates)
    if (cand.world_sizes.front() != 6) ranks.push_back(cand.world_sizes.front());
  EXPECT_EQ(ranks, (std::vector<int>{1, 2, 3, 5}));
  std::vector<std::int64_t> samples;
  for (const auto& cand : candidates)
    if (cand.data.num_samples != 100) samples.push_back(cand.data.num_samples);
  EXPECT_EQ(samples.front(), 0);
  EXPECT_TRUE(std::is_sorted(samples.begin(), samples.end()));
  const auto again = ex::shrink_candidates(*s);
  ASSERT_EQ(again.size(), candidates.size());
  for (std::size_t i = 0; i < again.size(); ++i) {
    EXPECT_EQ(ex::scenario_to_toml(again[i], {}, false), ex::scenario_to_toml(candidates[i], {}, false));
    EXPECT_NE(ex::scenario_to_toml(again[i], {}, false), toml);
  }
}

namespace {

// The rank state a report names ("stuck"), as the runtime spells it.
distmetrics::runtime::RankState state_named(const std::string& name) {
  using distmetrics::runtime::RankState;
  for (auto state : {RankState::Finished, RankState::Raised, RankState::TimedOut, RankState::Stuck, RankState::Crashed,
                     RankState::Ended})
    if (name == distmetrics::runtime::to_string(state)) return state;
  ADD_FAILURE() << "no rank state is named " << name;
  return RankState::Finished;
}

// A verdict with these properties (name, outcome, consequence_of) and rank end states.
distmetrics::harness::Verdict verdict(distmetrics::harness::Outcome outcome,
                                      const std::vector<std::tuple<std::string, distmetrics::harness::Outcome, std::string>>& properties,
                                      const std::vector<std::string>& states) {
  distmetrics::harness::Verdict v;
  v.outcome = outcome;
  for (const auto& [name, result, consequence_of] : properties) {
    distmetrics::harness::PropertyResult p;
    p.name = name;
    p.outcome = result;
    p.consequence_of = consequence_of;
    v.properties.push_back(p);
  }
  for (std::size_t r = 0; r < states.size(); ++r) {
    distmetrics::harness::RankReport rank;
    rank.rank = static_cast<int>(r);
    rank.state = state_named(states[r]);
    v.ranks.push_back(rank);
  }
  return v;
}

}  // namespace

TEST(ExploreSignature, ReadsOutcomeFirstHandPropertiesAndRankStates) {
  using distmetrics::harness::Outcome;
  EXPECT_FALSE(ex::failure_signature(verdict(Outcome::Pass, {}, {})));
  const auto hang = verdict(Outcome::Hang, {{"no_hang", Outcome::Fail, ""}, {"ranks_agree", Outcome::Fail, "no_hang"}},
                            {"stuck", "raised", "stuck"});
  const auto sig = ex::failure_signature(hang);
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->text(), "hang [no_hang] ranks: raised, stuck");
  // Fewer ranks, the same pattern: the same failure.
  auto smaller = hang;
  smaller.ranks.pop_back();
  smaller.ranks[0].state = distmetrics::runtime::RankState::Raised;
  smaller.ranks[1].state = distmetrics::runtime::RankState::Stuck;
  EXPECT_TRUE(*ex::failure_signature(smaller) == *sig);
}

// A hang that the machine's load may explain is told from the verdict's typed fields: no rank
// raised, crashed or timed out in a collective and nothing parted; an error, only when the
// single-process reference ran past the deadline. The reason's words decide nothing.
TEST(ExploreMaybeSlow, DecidesFromTheVerdictsRankStatesDeviationAndReferenceFlag) {
  using distmetrics::harness::Outcome;
  EXPECT_TRUE(ex::maybe_slow(verdict(Outcome::Hang, {}, {"stuck", "finished"})));
  EXPECT_FALSE(ex::maybe_slow(verdict(Outcome::Hang, {}, {"timed_out", "finished"})));
  EXPECT_FALSE(ex::maybe_slow(verdict(Outcome::Hang, {}, {"stuck", "raised"})));
  EXPECT_FALSE(ex::maybe_slow(verdict(Outcome::Hang, {}, {"crashed", "stuck"})));
  auto parted = verdict(Outcome::Hang, {}, {"stuck", "finished"});
  parted.deviation = distmetrics::harness::Deviation{};
  EXPECT_FALSE(ex::maybe_slow(parted));

  auto past = verdict(Outcome::Error, {}, {});
  past.reason = "the single-process reference failed: the plugin's metric, in its single-process run, raised ValueError";
  past.single_past_deadline = true;
  EXPECT_TRUE(ex::maybe_slow(past));
  auto worded = verdict(Outcome::Error, {}, {});
  worded.reason = "the single-process reference failed: the plugin's metric, in its single-process run (no communicator; "
                  "on a helper process), did not finish within the deadline (2 s)";
  EXPECT_FALSE(ex::maybe_slow(worded));
  EXPECT_FALSE(ex::maybe_slow(verdict(Outcome::Fail, {}, {})));
}

// Fewer samples come first with the batch size scaled down alike (every rank keeps its number of
// batches, so 'update N' and 'update P%' feed the same share), then with the batch size kept.
TEST(ExploreShrink, FewerSamplesKeepTheNumberOfBatchesFirst) {
  const auto scenarios = core_scenarios();
  const Scenario* base = find(scenarios, "core/mean_absolute_error");
  ASSERT_TRUE(base);
  ex::Space space;
  space.world_sizes = {2};
  auto c = ex::generate_case(*base, space, 3, 0).scenario;
  c.data.num_samples = 20000;
  c.batch_size = 1000;  // 10 batches a rank
  const auto s = ex::load_case(ex::scenario_to_toml(c, {}, false), "case");
  ASSERT_TRUE(s);
  std::vector<std::pair<std::int64_t, std::int64_t>> sizes;  // (samples, batch) in candidate order
  for (const auto& cand : ex::shrink_candidates(*s))
    if (cand.data.num_samples != 20000) sizes.emplace_back(cand.data.num_samples, cand.batch_size);
  const auto at = [&](std::int64_t samples) {
    std::vector<std::int64_t> batches;
    for (const auto& [n, b] : sizes)
      if (n == samples) batches.push_back(b);
    return batches;
  };
  EXPECT_EQ(at(10000), (std::vector<std::int64_t>{500, 1000}));  // scaled first, then kept
  EXPECT_EQ(at(16), (std::vector<std::int64_t>{1, 16}));
  EXPECT_EQ(at(0), (std::vector<std::int64_t>{1}));
}

// A drawn spread below 1e-3 of the data's magnitude is widened (a one-pass variance would cancel
// to rounding: R2Score's value would depend on the batching); the magnitudes stay extreme.
TEST(ExploreSpace, TheDataSpreadStaysResolvableAgainstItsMagnitude) {
  const auto scenarios = core_scenarios();
  const Scenario* base = find(scenarios, "core/r2_score");
  ASSERT_TRUE(base);
  ASSERT_EQ(base->data.params.at("offset"), 3.0);
  ex::Space space;
  space.world_sizes = {2};
  int extreme = 0, widened = 0;
  for (std::uint64_t i = 0; i < 400; ++i) {
    const auto s = ex::generate_case(*base, space, 5, i).scenario;
    const double offset = s.data.params.value("offset", 0.0), scale = s.data.params.value("scale", 1.0);
    if (scale > 0) EXPECT_GE(scale, std::fabs(offset) * 1e-3) << "case " << i << ": " << s.data.params.dump();
    extreme += std::fabs(offset) >= 1e9 || scale >= 1e9;
    widened += scale > 0 && scale == std::fabs(offset) * 1e-3;
    // And its shrink candidates (a parameter back to its default must not narrow it).
    for (const auto& c : ex::shrink_candidates(s)) {
      const double o = c.data.params.value("offset", 0.0), sc = c.data.params.value("scale", 1.0);
      if (sc > 0) {
        EXPECT_GE(sc, std::fabs(o) * 1e-3) << "case " << i << ": " << c.data.params.dump();
      }
    }
  }
  EXPECT_GT(extreme, 0);
  EXPECT_GT(widened, 0);  // drawn narrower (1e-7 around 3, ...), widened
}

// A comparison with the single process that failed where equal_to_single judged nothing is the
// same failure as equal_to_single's (a maximum reduced with SUM, seen through 'reset, update,
// compute'); where equal_to_single held, update_after_compute keeps its own name.
TEST(ExploreSignature, AComparisonWithTheSingleProcessWhereEqualToSingleJudgedNothingIsEqualToSingle) {
  using distmetrics::harness::Outcome;
  const auto through_reset = verdict(Outcome::Fail,
                                     {{"equal_to_single", Outcome::Skip, ""}, {"reset_replay", Outcome::Fail, ""},
                                      {"ranks_agree", Outcome::Pass, ""}},
                                     {"finished", "finished"});
  const auto fresh = verdict(Outcome::Fail,
                             {{"equal_to_single", Outcome::Fail, ""}, {"update_after_compute", Outcome::Fail, "equal_to_single"}},
                             {"finished", "finished"});
  ASSERT_TRUE(ex::failure_signature(through_reset));
  EXPECT_EQ(ex::failure_signature(through_reset)->text(), "fail [equal_to_single]");
  EXPECT_TRUE(*ex::failure_signature(through_reset) == *ex::failure_signature(fresh));
  auto later = fresh;  // equal_to_single held: a later compute's own failure
  later.properties[0].outcome = Outcome::Pass;
  later.properties[1].consequence_of.clear();
  EXPECT_EQ(ex::failure_signature(later)->text(), "fail [update_after_compute]");
}

// A reset goes with the replays after it: alone, either would leave the script invalid or
// feeding nothing, and 'update, reset, replay, compute' would not shrink to 'update, compute'.
TEST(ExploreShrink, AResetIsLeftOutWithItsReplays) {
  const auto scenarios = core_scenarios();
  const Scenario* base = find(scenarios, "core/mean_absolute_error");
  ASSERT_TRUE(base);
  ex::Space space;
  space.world_sizes = {2};
  auto c = ex::generate_case(*base, space, 3, 0).scenario;
  c.script.clear();
  for (const char* step : {"update", "reset", "replay", "compute"}) c.script.push_back(distmetrics::harness::parse_step(step));
  const auto s = ex::load_case(ex::scenario_to_toml(c, {}, false), "case");
  ASSERT_TRUE(s);
  bool plain = false;
  for (const auto& cand : ex::shrink_candidates(*s)) {
    std::vector<std::string> steps;
    for (const auto& step : cand.script) steps.push_back(step.text);
    plain = plain || steps == std::vector<std::string>{"update", "compute"};
  }
  EXPECT_TRUE(plain);
}

// The computes at which no rank had fed a sample since the last reset: a compute before any
// update, one after a reset, and every compute of a rank set whose shards are empty; not one
// after an update that fed a rank a sample (explore's false agrees_with_reference failure on
// `compute, compute, update, compute`: NaN against NotComputableError at the first two).
TEST(ExploreOracle, ComputesWithoutDataAreThoseNoRankFedASampleSinceTheLastReset) {
  namespace h = distmetrics::harness;
  auto script = [](std::vector<std::string> steps) {
    std::vector<h::Step> out;
    for (const auto& s : steps) out.push_back(h::parse_step(s));
    return out;
  };
  // 2 ranks, 5 samples, batches of 2: even gives rank 0 samples {0,1,2} (2 batches), rank 1 {3,4} (1).
  std::vector<double> keys(5, 0.0);
  const h::ShardPlan shards = h::make_shard_plan("even", keys, 2, 2, 1);
  ASSERT_EQ(shards.batches_of(0) + shards.batches_of(1), 3u);
  const auto plan = h::simulate_script(script({"compute", "compute", "update", "compute", "reset", "compute", "replay", "compute"}),
                                       {shards.batches_of(0), shards.batches_of(1)});
  EXPECT_EQ(ex::computes_without_data(plan, shards), (std::set<int>{0, 1, 3}));
  // Only rank 1 updates (ranks=1): it has a sample, so the compute is judged.
  const auto one = h::simulate_script(script({"update ranks=1", "compute"}), {shards.batches_of(0), shards.batches_of(1)});
  EXPECT_TRUE(ex::computes_without_data(one, shards).empty());
  // No samples at all: every compute.
  const h::ShardPlan none = h::make_shard_plan("even", std::vector<double>{}, 2, 2, 1);
  const auto empty = h::simulate_script(script({"update", "compute", "update rest", "compute"}),
                                        {none.batches_of(0), none.batches_of(1)});
  EXPECT_EQ(ex::computes_without_data(empty, none), (std::set<int>{0, 1}));
}

// Past Space::max_batches_single samples, batch_invariant's smallest other batch size feeds the
// single process at most that many batches (batch size 1 over 18000 samples was most of a case's
// time); the sizes travel in the case's file and the loader reads them back; a shrunk candidate
// re-derives them for its own samples, back to the loader's default (1 and 2b + 1) once small.
TEST(ExploreSpace, LargeCasesBoundBatchInvariantsBatchesAndTheFileCarriesTheSizes) {
  EXPECT_TRUE(ex::batch_invariant_sizes_within(256, 4, 256).empty());
  EXPECT_TRUE(ex::batch_invariant_sizes_within(100000, 4, 0).empty());
  EXPECT_EQ(ex::batch_invariant_sizes_within(17967, 4491, 256), (std::vector<std::int64_t>{71, 8983}));
  EXPECT_EQ(ex::batch_invariant_sizes_within(1000, 4, 100), (std::vector<std::int64_t>{10, 9}));
  EXPECT_EQ(ex::batch_invariant_sizes_within(1000, 10, 100), (std::vector<std::int64_t>{21}));  // never the case's own

  const auto scenarios = core_scenarios();
  const Scenario* base = find(scenarios, "core/mean_absolute_error");
  ASSERT_TRUE(base);
  ex::Space space;
  space.world_sizes = {2};
  int large = 0, small = 0;
  for (std::uint64_t i = 0; i < 300 && (large < 3 || small < 3); ++i) {
    const ex::Case c = ex::generate_case(*base, space, 11, i);
    const std::string toml = ex::scenario_to_toml(c.scenario, {}, false);
    const auto loaded = ex::load_case(toml, "case");
    if (!loaded) continue;
    const std::int64_t n = loaded->data.num_samples, b = loaded->batch_size;
    if (n > space.max_batches_single) {
      ++large;
      EXPECT_NE(toml.find("[batch_invariant]"), std::string::npos) << toml;
      EXPECT_EQ(loaded->batch_invariant_sizes, ex::batch_invariant_sizes_within(n, b, space.max_batches_single));
      const auto smallest = *std::min_element(loaded->batch_invariant_sizes.begin(), loaded->batch_invariant_sizes.end());
      EXPECT_LE((n + std::min(smallest, b) - 1) / std::min(smallest, b), space.max_batches_single) << toml;
      for (const auto& cand : ex::shrink_candidates(*loaded, space.max_batches_single))
        EXPECT_EQ(cand.batch_invariant_sizes, ex::batch_invariant_sizes_within(cand.data.num_samples, cand.batch_size,
                                                                               space.max_batches_single));
    } else {
      ++small;
      EXPECT_EQ(toml.find("[batch_invariant]"), std::string::npos) << toml;
      // The loader's default: 1 and 2b + 1, never b itself.
      const std::vector<std::int64_t> loader_default =
          b == 1 ? std::vector<std::int64_t>{3} : std::vector<std::int64_t>{1, 2 * b + 1};
      EXPECT_EQ(loaded->batch_invariant_sizes, loader_default);
    }
  }
  EXPECT_GE(large, 3);
  EXPECT_GE(small, 3);
}

// A metric's parameters decide what data it takes (Precision's task: binary, multiclass or
// multilabel): with the task given, the base is made of the generator that fits it; drawn, every
// task is searched, each case on data of its task. The generator table and the metric's parameter
// descriptors decide, not names in explore.
TEST(ExploreSpace, EveryTaskOfAMetricIsSearchedOnDataThatFitsIt) {
  std::ostringstream diagnostics;
  for (const char* task : {"binary", "multiclass", "multilabel"}) {
    json params = {{"task", task}};
    if (std::string(task) != "binary") params["num_classes"] = 4;
    const Scenario base = ex::choose_base("Precision", params, "", diagnostics);
    EXPECT_EQ(base.data.generator, task) << task;
    ex::Space space;
    space.world_sizes = {1, 2};
    space.vary_metric_params = false;  // given: kept
    space.generator_for = ex::generator_chooser(base);
    int loaded = 0;
    for (std::uint64_t i = 0; i < 40; ++i) {
      const auto c = ex::generate_case(base, space, 11, i);
      const auto s = ex::load_case(ex::scenario_to_toml(c.scenario, {}, false), "case");
      if (!s) continue;
      ++loaded;
      EXPECT_EQ(s->data.generator, task);
      EXPECT_EQ(s->metric_params.at("task"), task);
    }
    EXPECT_GE(loaded, 20) << task;  // most draws are valid scenarios (as for a metric of one task)
  }
  // Drawn: from the library's multiclass scenario (segmentation data), every task, each on data the
  // metric takes for it: the base's where they fit, else the generator of that task.
  const Scenario base =
      ex::choose_base("Precision", json::object(), std::string(DISTMETRICS_SCENARIO_ROOT) + "/core/precision_macro.toml",
                      diagnostics);
  ex::Space space;
  space.world_sizes = {1, 2};
  space.generator_for = ex::generator_chooser(base);
  std::set<std::string> tasks;
  int loaded = 0;
  for (std::uint64_t i = 0; i < 120; ++i) {
    const auto c = ex::generate_case(base, space, 5, i);
    const auto s = ex::load_case(ex::scenario_to_toml(c.scenario, {}, false), "case");
    if (!s) continue;
    ++loaded;
    const std::string task = s->metric_params.at("task");
    tasks.insert(task);
    if (task == "multiclass") EXPECT_EQ(s->data.generator, base.data.generator);
    else EXPECT_EQ(s->data.generator, task) << ex::scenario_to_toml(*s, {}, false);
  }
  EXPECT_EQ(tasks, (std::set<std::string>{"binary", "multiclass", "multilabel"}));
  EXPECT_GE(loaded, 60);
}
