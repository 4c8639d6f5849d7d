// conform's agrees_with_reference runs the reference implementation on the helper worker under
// the variant's deadline (issue 12): one that never finishes is ended there and the variant is a
// hang naming it, within the deadline plus a generous margin (a bound on hanging, not a speed check);
// the next variant, with a reference that finishes, passes. In this process, through the engine
// and a local rank pool whose workers are this binary (and know the engine tests' metrics).
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>

#include "distmetrics/harness/engine.h"
#include "distmetrics/harness/session.h"
#include "distmetrics/harness/scenario.h"
#include "distmetrics/plugin/conform.h"
#include "distmetrics/build_config.h"
#include "distmetrics/runtime/comm.h"
#include "distmetrics/runtime/task.h"
#include "engine_broken_metrics.h"

namespace dh = distmetrics::harness;
namespace dr = distmetrics::runtime;

namespace {

// The helper worker is this binary: it must know the helper's tasks before it serves one.
const bool plugin_tasks_registered = [] {
  distmetrics::plugin::register_plugin_support();
  return true;
}();

std::string explain(const dh::Verdict& v) {
  std::ostringstream out;
  out << v.variant.id << ": " << to_string(v.outcome) << ": " << v.reason << "\n" << v.diagnosis << "\n";
  for (const auto& p : v.properties) out << "  " << p.name << " " << to_string(p.outcome) << ": " << p.message << "\n";
  return out.str();
}

// The helper worker keeps a scenario's single-process runs across its variants (issue 43): the
// key is the metric, its parameters, the data and the input dtype, not the scenario's name or
// plan, so the own rows' .ws2 file of a class shares the runs of its 3-rank file; the references
// are the ones built afresh; other data drops what was kept.
TEST(ConformReference, TheHelperKeepsSingleProcessRunsAcrossVariantsOfTheSameMetricAndData) {
  dh::testing::register_broken_metrics();
  auto loaded = dh::load_scenario(std::string(ENGINE_TEST_SCENARIOS) + "/broken/correct_mean.toml", "broken/correct_mean");
  ASSERT_TRUE(loaded.scenario);
  const dh::Scenario three = *loaded.scenario;
  dh::Scenario two = three;  // what peers/scenarios.py writes beside it: another name, another plan
  two.name += ".ws2";
  two.world_sizes = {2};
  const auto* task = dr::TaskRegistry::instance().find(distmetrics::plugin::kPluginReferenceTask);
  ASSERT_NE(task, nullptr);
  const auto comm = dr::make_single_process_communicator();
  // The helper is sent the plan the engine made (it never plans).
  auto call = [&](const dh::Scenario& s, const std::string& shard, int world_size) {
    const auto plan = dh::plan_variant(s, dh::generate_data(s.data), shard, world_size);
    const nlohmann::json params = {{"scenario", s.to_json()}, {"dtype", ""}, {"plan", plan.to_json()}};
    dr::TaskContext ctx{0, 1, 0, *comm, params, s.name};
    return (*task)(ctx);
  };
  const auto first = call(three, "uneven", 3);
  const auto hits = first.at("memo").at("hits").get<std::size_t>();
  const auto second = call(two, "even", 2);
  EXPECT_GT(second.at("memo").at("hits").get<std::size_t>(), hits);  // the full data's run, at least
  // Each the reference built without the memo, on its own plan.
  for (const auto& [s, shard, ws, got] : {std::tuple{three, std::string("uneven"), 3, first},
                                          std::tuple{two, std::string("even"), 2, second}}) {
    const dh::Dataset data = dh::generate_data(s.data);
    const auto plan = dh::plan_variant(s, data, shard, ws);
    const auto fresh = dh::reference_to_json(dh::build_reference(s, data, plan.shards, plan.script));
    EXPECT_EQ(got.at("full"), fresh.at("full"));
    EXPECT_EQ(got.at("at_compute"), fresh.at("at_compute"));
  }
  dh::Scenario other = three;  // other data: nothing kept applies
  other.data.seed += 1;
  const auto third = call(other, "uneven", 3);
  EXPECT_EQ(third.at("memo").at("hits").get<std::size_t>(), second.at("memo").at("hits").get<std::size_t>());
  EXPECT_GT(third.at("memo").at("runs").get<std::size_t>(), second.at("memo").at("runs").get<std::size_t>());
}

#if DISTMETRICS_HAVE_GLOO
TEST(ConformReference, AReferenceImplementationPastTheDeadlineIsAHangNamingIt) {
  dh::testing::register_broken_metrics();
  auto loaded = dh::load_scenario(std::string(ENGINE_TEST_SCENARIOS) + "/broken/correct_mean.toml", "broken/correct_mean");
  ASSERT_TRUE(loaded.scenario);
  const dh::Scenario scenario = *loaded.scenario;
  // The reference implementation agrees_with_reference runs: one whose second update never
  // finishes without a communicator, then the correct one.
  dh::Scenario reference = scenario;
  reference.metric = "EndlessWhenAloneMean";

  constexpr double kDeadline = 3;
  dh::EngineOptions options;
  options.deadline_seconds = kDeadline;
  distmetrics::plugin::RemoteReference remote(kDeadline);
  options.extra_checks.push_back([&reference, &remote](const dh::CheckContext& ctx, const dh::Dataset&,
                                                       const dh::ShardPlan& shards, const dr::Deadline& until) {
    return distmetrics::plugin::check_agrees_with_reference(ctx, reference, shards, remote, until);
  });
  dh::Engine engine(options);
  dh::LocalPools pools({}, 1);
  const dh::Variant* chosen = nullptr;
  const auto variants = dh::expand_variants(scenario, 0);
  for (const auto& v : variants)
    if (v.backend == "gloo" && v.world_size == 2 && v.shard == "even") chosen = &v;
  ASSERT_TRUE(chosen);

  const auto started = std::chrono::steady_clock::now();
  const dh::Verdict hung = engine.run(scenario, *chosen, pools.runner_for(*chosen));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(3 + 15));
  ASSERT_EQ(hung.outcome, dh::Outcome::Hang) << explain(hung);
  EXPECT_EQ(hung.reason.rfind("agrees_with_reference: the reference implementation of EndlessWhenAloneMean did not "
                              "finish within the variant's deadline (ended after ",
                              0),
            0u)
      << explain(hung);
  const auto* no_hang = hung.property("no_hang");
  ASSERT_TRUE(no_hang);
  EXPECT_EQ(no_hang->outcome, dh::Outcome::Fail) << explain(hung);
  EXPECT_EQ(no_hang->message, "no_hang failed: " + hung.reason);
  const auto* agrees = hung.property("agrees_with_reference");
  ASSERT_TRUE(agrees);
  EXPECT_EQ(agrees->outcome, dh::Outcome::Hang) << explain(hung);
  EXPECT_NE(hung.diagnosis.find("raise it (--deadline or the scenario's `deadline`)"), std::string::npos) << hung.diagnosis;

  reference.metric = "CorrectMean";
  const dh::Verdict next = engine.run(scenario, *chosen, pools.runner_for(*chosen));
  ASSERT_EQ(next.outcome, dh::Outcome::Pass) << explain(next);
  ASSERT_TRUE(next.property("agrees_with_reference"));
  EXPECT_EQ(next.property("agrees_with_reference")->outcome, dh::Outcome::Pass) << explain(next);
}
#endif

}  // namespace
