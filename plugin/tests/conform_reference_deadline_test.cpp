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
                                                       const dh::ShardPlan&, const dr::Deadline& until) {
    return distmetrics::plugin::check_agrees_with_reference(ctx, reference, remote, until);
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
