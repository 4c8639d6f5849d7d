// Property checkers on crafted observations: each fails exactly when it should, with a message
// that shows the single-process value, every rank's value, the difference and the command that
// reproduces the variant. Also the reports (console, JSON, JUnit) and exit codes.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <stdexcept>

#include "distmetrics/harness/internal/blame.h"
#include "distmetrics/harness/check.h"
#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/harness/report.h"
#include "distmetrics/harness/report_model.h"
#include "distmetrics/harness/observation.h"
#include "distmetrics/harness/root_cause.h"
#include "distmetrics/runtime/errors.h"

namespace dh = distmetrics::harness;
using nlohmann::json;

namespace {

dh::Scenario scenario() {
  dh::Scenario s;
  s.name = "core/crafted";
  s.file = "scenarios/core/crafted.toml";
  s.description = "crafted";
  s.metric = "Accuracy";
  s.data.seed = 7;
  s.batch_size = 4;
  for (const auto& t : dh::default_script_text()) s.script.push_back(dh::parse_step(t));
  s.properties = {"equal_to_single", "ranks_agree", "idempotent", "update_after_compute", "reset_replay", "batch_invariant"};
  return s;
}

dh::Variant variant(int ws = 2) {
  dh::Variant v;
  v.scenario = "core/crafted";
  v.file = "scenarios/core/crafted.toml";
  v.backend = "gloo";
  v.world_size = ws;
  v.shard = "uneven";
  v.placement = "cpu";
  v.seed = 7;
  v.id = dh::variant_id(v.scenario, v.backend, ws, v.shard, v.placement);
  return v;
}

dh::ComputeResult value(double v) {
  dh::ComputeResult r;
  r.value = v;
  return r;
}

dh::ComputeResult raised(const std::string& type) {
  dh::ComputeResult r;
  r.error_type = type;
  r.error = "no samples on any rank";
  return r;
}

// A rank's observation with the given results for computes 0..n-1 (digests unchanged).
dh::RankObservation observation(int rank, const std::vector<dh::ComputeResult>& results, const dh::ScriptPlan& plan) {
  dh::RankObservation o;
  o.rank = rank;
  o.state_device = o.input_device = o.comm_device = "cpu";
  for (std::size_t k = 0; k < results.size(); ++k) {
    dh::ComputeRecord c;
    c.index = static_cast<int>(k);
    c.step = plan.computes[k].step;
    c.result = results[k];
    c.digest_before = c.digest_after = "d" + std::to_string(k);
    o.computes.push_back(c);
  }
  return o;
}

// The default script on 2 ranks holding 4 batches each: computes at 50%, again, at 100%, after replay.
struct Fixture {
  dh::Scenario s = scenario();
  dh::Variant v = variant();
  dh::ScriptPlan plan = dh::simulate_script(s.script, {4, 4});
  dh::SingleProcessReference single;
  std::vector<dh::RankObservation> ranks;

  Fixture() {
    single.at_compute = {value(0.5), value(0.5), value(0.75), value(0.75)};
    single.full = value(0.75);
    single.other_batch_sizes = {{1, value(0.75)}, {9, value(0.75)}};
    for (int r = 0; r < 2; ++r) ranks.push_back(observation(r, single.at_compute, plan));
  }
  std::vector<dh::PropertyResult> check() const { return dh::check_properties({s, v, plan, single, ranks}); }
  dh::PropertyResult get(const std::string& name) const {
    for (auto& p : check())
      if (p.name == name) return p;
    ADD_FAILURE() << "no property " << name;
    return {};
  }
};

std::vector<std::string> failing(const std::vector<dh::PropertyResult>& results) {
  std::vector<std::string> names;
  for (const auto& p : results)
    if (p.outcome == dh::Outcome::Fail) names.push_back(p.name);
  return names;
}

}  // namespace

TEST(Checks, AllHoldForACorrectMetric) {
  Fixture f;
  const auto results = f.check();
  ASSERT_EQ(results.size(), 7u);  // the six listed, and accepts_empty_batch (the script has 'update empty')
  EXPECT_TRUE(failing(results).empty());
  for (const auto& p : results) EXPECT_EQ(p.outcome, dh::Outcome::Pass) << p.message;
}

TEST(Checks, NoSyncFailsEqualToSingleWithTheValuesAndTheCommand) {
  Fixture f;  // each rank reports its local value: 0.4 and 0.6 instead of 0.5
  f.ranks[0] = observation(0, {value(0.4), value(0.4), value(0.7), value(0.7)}, f.plan);
  f.ranks[1] = observation(1, {value(0.6), value(0.6), value(0.8), value(0.8)}, f.plan);
  const auto p = f.get("equal_to_single");
  ASSERT_EQ(p.outcome, dh::Outcome::Fail);
  EXPECT_NE(p.message.find("compute 1 of 4"), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("single process: 0.5"), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("rank 0: 0.4"), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("rank 1: 0.6"), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("difference 0.1"), std::string::npos) << p.message;
  // The variant and the command that reproduces it: in the full message (the JSON report's), not
  // in what the views show (they say them once).
  EXPECT_NE(p.full_message().find("backend gloo, world size 2, shard uneven, placement cpu, seed 7"), std::string::npos);
  EXPECT_NE(p.full_message().find("distmetrics run scenarios/core/crafted.toml --filter 'core/crafted:gloo-ws2-uneven-cpu'"),
            std::string::npos);
  EXPECT_EQ(p.message.find("reproduce: "), std::string::npos) << p.message;
  EXPECT_EQ(p.full_message(), p.message + p.variant_lines);
  ASSERT_TRUE(p.difference);
  EXPECT_NEAR(*p.difference, 0.1, 1e-12);
  ASSERT_TRUE(p.single && p.single->value);
  EXPECT_EQ(*p.single->value, json(0.5));
  ASSERT_EQ(p.values.size(), 2u);
  EXPECT_EQ(*p.values[0]->value, json(0.4));
  EXPECT_EQ(*p.values[1]->value, json(0.6));
  // Each rank's line, typed as the message shows it.
  ASSERT_EQ(p.lines.size(), 2u);
  EXPECT_EQ(p.lines[1].rank, 1);
  EXPECT_TRUE(p.lines[1].differs);
  ASSERT_TRUE(p.lines[1].difference);
  EXPECT_NEAR(*p.lines[1].difference, 0.1, 1e-12);
  EXPECT_NE(p.message.find("  rank 1: " + p.lines[1].text + "\n"), std::string::npos) << p.message;
  EXPECT_EQ(p.tolerance, "rtol 1e-06, atol 1e-09; integer tensors exact");
  // The replay after reset is judged against the single process, which no rank gives either.
  EXPECT_EQ(failing(f.check()),
            (std::vector<std::string>{"equal_to_single", "ranks_agree", "update_after_compute", "reset_replay"}));
}

TEST(Checks, SyncThatOverwritesLocalStateFailsUpdateAfterComputeOnly) {
  Fixture f;  // first compute right; after more updates the already-reduced state is counted again
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, {value(0.5), value(0.5), value(0.8125), value(0.75)}, f.plan);
  // reset() is fine: the replay's compute gives the single-process value (not compute 3's).
  EXPECT_EQ(failing(f.check()), (std::vector<std::string>{"update_after_compute"}));
  const auto p = f.get("update_after_compute");
  EXPECT_NE(p.message.find("compute 3 of 4"), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("single process: 0.75"), std::string::npos) << p.message;
}

TEST(Checks, SecondComputeThatDiffersFailsIdempotent) {
  Fixture f;
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, {value(0.5), value(1.0), value(0.75), value(0.75)}, f.plan);
  EXPECT_EQ(failing(f.check()), (std::vector<std::string>{"idempotent"}));
  const auto p = f.get("idempotent");
  EXPECT_NE(p.message.find("compute 2 of 4"), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("(the compute before: 0.5)"), std::string::npos) << p.message;
}

TEST(Checks, ComputeThatChangesLocalStateFailsIdempotent) {
  Fixture f;
  f.ranks[1].computes[2].digest_after = "changed";
  const auto p = f.get("idempotent");
  ASSERT_EQ(p.outcome, dh::Outcome::Fail);
  EXPECT_NE(p.message.find("changed rank 1's local state"), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("d2 before, changed after"), std::string::npos) << p.message;
}

TEST(Checks, ReplayThatDiffersFailsResetReplay) {
  Fixture f;  // reset() forgot a counter: the replay counts the first pass too
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, {value(0.5), value(0.5), value(0.75), value(0.6)}, f.plan);
  EXPECT_EQ(failing(f.check()), (std::vector<std::string>{"reset_replay"}));
  EXPECT_NE(f.get("reset_replay").message.find("single process: 0.75"), std::string::npos);
}

TEST(Checks, RanksThatDisagreeFailRanksAgree) {
  Fixture f;
  f.ranks[1] = observation(1, {value(0.5), value(0.5), value(0.75), value(0.7500001)}, f.plan);
  f.s.tolerance.rtol = 0;
  f.s.tolerance.atol = 0;
  const auto p = f.get("ranks_agree");
  ASSERT_EQ(p.outcome, dh::Outcome::Fail);
  EXPECT_NE(p.message.find("(rank 0: 0.75)"), std::string::npos) << p.message;
}

TEST(Checks, PerBatchStatisticsFailBatchInvariant) {
  Fixture f;
  f.single.other_batch_sizes = {{1, value(0.9)}, {9, value(0.75)}};
  EXPECT_EQ(failing(f.check()), (std::vector<std::string>{"batch_invariant"}));
  const auto p = f.get("batch_invariant");
  EXPECT_NE(p.message.find("batch size 1: 0.9"), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("batch size 4 (the scenario's): 0.75"), std::string::npos) << p.message;
}

TEST(Checks, GoldenComparesTheFullDataResult) {
  Fixture f;
  f.s.properties.push_back("golden");
  f.s.golden = dh::Golden{0.75, 1e-6, 1e-9};
  EXPECT_EQ(f.get("golden").outcome, dh::Outcome::Pass) << f.get("golden").message;
  f.s.golden = dh::Golden{0.7, 1e-6, 1e-9};
  const auto p = f.get("golden");
  ASSERT_EQ(p.outcome, dh::Outcome::Fail);
  EXPECT_NE(p.message.find("golden: 0.7"), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("rank 1, compute 3: 0.75"), std::string::npos) << p.message;
}

TEST(Checks, ExpectedErrorMustBeRaisedByEveryRankTogether) {
  Fixture f;
  f.s.expect.error = "NotComputableError";
  f.s.script = {dh::parse_step("update rest"), dh::parse_step("compute")};
  f.s.properties = {"equal_to_single", "ranks_agree"};
  f.plan = dh::simulate_script(f.s.script, {0, 0});
  f.single.at_compute = {raised("NotComputableError")};
  f.ranks = {observation(0, {raised("NotComputableError")}, f.plan), observation(1, {raised("NotComputableError")}, f.plan)};
  EXPECT_TRUE(failing(f.check()).empty());
  EXPECT_EQ(f.get("expected_error").outcome, dh::Outcome::Pass);
  f.ranks[1] = observation(1, {value(0.0)}, f.plan);
  EXPECT_EQ(failing(f.check()), (std::vector<std::string>{"equal_to_single", "ranks_agree", "expected_error"}));
  EXPECT_NE(f.get("expected_error").message.find("rank 1: 0   <- expected NotComputableError"), std::string::npos)
      << f.get("expected_error").message;
}

TEST(Checks, ExpectedFailuresAreTurnedAround) {
  Fixture f;
  f.s.expect.fail = {"equal_to_single"};
  f.s.expect.reason = "padding counts samples twice";
  EXPECT_EQ(failing(f.check()), (std::vector<std::string>{"equal_to_single"}));  // it held: that is the failure
  EXPECT_NE(f.get("equal_to_single").message.find("was expected to fail (padding counts samples twice)"), std::string::npos);
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, {value(0.52), value(0.52), value(0.75), value(0.75)}, f.plan);
  const auto p = f.get("equal_to_single");
  EXPECT_EQ(p.outcome, dh::Outcome::Pass);
  EXPECT_TRUE(p.expected_failure);
  EXPECT_NE(p.message.find("as the scenario expects"), std::string::npos);
}

// The one comparison loop (check.h): every rank at compute k, in rank order, against what it
// must equal; the properties and conform's agrees_with_reference read it.
TEST(Checks, CompareAtComputeLinesUpEveryRankWithWhatItMustEqual) {
  Fixture f;
  f.ranks[0].computes[2].result = value(0.7);   // differs from 0.75 by 0.05
  f.ranks[1].computes.resize(2);                 // rank 1 stopped before compute 2
  dh::Tolerance tol;
  tol.rtol = 0;
  tol.atol = 1e-3;
  int asked = 0;
  const auto lines = dh::compare_at_compute(f.ranks, 2, [&](int, int k) { ++asked; return &f.single.at_compute[k]; }, tol);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(asked, 2);  // asked of every rank, the one without a record too
  EXPECT_EQ(lines[0].rank, 0);
  ASSERT_TRUE(lines[0].compared());
  EXPECT_EQ(lines[0].record, &f.ranks[0].computes[2]);
  EXPECT_FALSE(lines[0].comparison.equal);
  EXPECT_NEAR(lines[0].comparison.difference, 0.05, 1e-12);
  EXPECT_EQ(lines[1].rank, 1);
  EXPECT_EQ(lines[1].record, nullptr);
  EXPECT_EQ(lines[1].actual, nullptr);
  EXPECT_FALSE(lines[1].compared());

  // Nothing to compare with on rank 0; a probe's result (actual_of) on rank 1.
  dh::ComputeResult probe = value(0.5);
  const auto probed = dh::compare_at_compute(
      f.ranks, 0, [&](int rank, int k) { return rank == 0 ? nullptr : &f.single.at_compute[k]; }, tol,
      [&](const dh::ComputeRecord&) { return &probe; });
  EXPECT_FALSE(probed[0].compared());
  EXPECT_EQ(probed[0].actual, &probe);
  ASSERT_TRUE(probed[1].compared());
  EXPECT_TRUE(probed[1].comparison.equal);
  EXPECT_EQ(probed[1].comparison.difference, 0.0);
}

TEST(Checks, ARankThatStoppedEarlyIsShownWithItsError) {
  Fixture f;
  f.ranks[1] = observation(1, {}, f.plan);
  f.ranks[1].error = dh::StepError{0, "update", "InputError", "Accuracy: input: expected [N, 5], got [N, 4]"};
  const auto p = f.get("equal_to_single");
  ASSERT_EQ(p.outcome, dh::Outcome::Fail);
  EXPECT_NE(p.message.find("rank 1: did not get there: its script stopped at step 1 (update), raising InputError"),
            std::string::npos)
      << p.message;
}

TEST(Checks, SkippedWhenTheScriptGivesNothingToJudge) {
  Fixture f;
  f.s.script = {dh::parse_step("update rest"), dh::parse_step("compute")};
  f.plan = dh::simulate_script(f.s.script, {4, 4});
  f.single.at_compute = {value(0.75)};
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, {value(0.75)}, f.plan);
  EXPECT_EQ(f.get("idempotent").outcome, dh::Outcome::Skip);
  EXPECT_EQ(f.get("reset_replay").outcome, dh::Outcome::Skip);
  EXPECT_EQ(f.get("equal_to_single").outcome, dh::Outcome::Pass);
}

// --- reports ------------------------------------------------------------------------------------

namespace {

dh::Verdict verdict(dh::Outcome outcome, const std::string& scenario_name, const std::string& shard) {
  dh::Verdict v;
  v.variant = variant(4);
  v.variant.scenario = scenario_name;
  v.variant.shard = shard;
  v.variant.id = dh::variant_id(scenario_name, "gloo", 4, shard, "cpu");
  v.outcome = outcome;
  v.seconds = 0.41;
  if (outcome == dh::Outcome::Skip) v.reason = v.skip_gist = "needs 4 GPUs";
  if (outcome == dh::Outcome::Pass || outcome == dh::Outcome::Fail || outcome == dh::Outcome::Hang) {
    dh::PropertyResult no_hang;
    no_hang.name = "no_hang";
    no_hang.outcome = outcome == dh::Outcome::Hang ? dh::Outcome::Fail : dh::Outcome::Pass;
    v.properties.push_back(no_hang);
  }
  if (outcome == dh::Outcome::Pass) {
    dh::PropertyResult p;
    p.name = "equal_to_single";
    v.properties.push_back(p);
  }
  if (outcome == dh::Outcome::Fail) {
    v.reason = "equal_to_single failed at compute 1";
    dh::PropertyResult p;
    p.name = "equal_to_single";
    p.outcome = dh::Outcome::Fail;
    p.message = "equal_to_single failed at compute 1 <&>\n  single process: 0.5";
    p.single = dh::ComputeResult{json(0.5), "", ""};
    p.values = {dh::ComputeResult{json(0.4), "", ""}, dh::ComputeResult{json(0.6), "", ""}};
    p.difference = 0.1;
    v.properties.push_back(p);
  }
  if (outcome == dh::Outcome::Hang) {
    v.reason = "rank 2 to blame: rank 2 raised NotComputableError";
    v.diagnosis = "rank 2 raised NotComputableError\nrank states: ...";
  }
  return v;
}

}  // namespace

TEST(Reports, ConsoleProgressIsOneSymbolPerVariantOrALineWithVerbose) {
  std::ostringstream compact;
  dh::ConsoleReport dots(compact, 120, {});
  for (int i = 0; i < 2; ++i) dots.progress(verdict(dh::Outcome::Pass, "core/a", "even"));
  dots.progress(verdict(dh::Outcome::Fail, "core/accuracy_multiclass", "uneven"));
  dots.progress(verdict(dh::Outcome::Skip, "core/b", "even"));
  EXPECT_EQ(compact.str(), "..Fs");
  dots.finish(dh::ReportModel{});
  EXPECT_EQ(compact.str().rfind("..Fs" + std::string(46, ' ') + "  [  4/120]\n", 0), 0u) << compact.str();

  std::ostringstream lines;
  dh::ConsoleOptions verbose;
  verbose.verbose = true;
  dh::ConsoleReport console(lines, 120, verbose);
  console.progress(verdict(dh::Outcome::Pass, "core/a", "even"));
  console.progress(verdict(dh::Outcome::Fail, "core/accuracy_multiclass", "uneven"));
  console.progress(verdict(dh::Outcome::Skip, "core/b", "even"));
  EXPECT_EQ(lines.str(),
            "[  1/120] PASS  core/a:gloo-ws4-even-cpu  (0.41 s)\n"
            "[  2/120] FAIL  core/accuracy_multiclass:gloo-ws4-uneven-cpu  (0.41 s): equal_to_single failed at compute 1\n"
            "[  3/120] SKIP  core/b:gloo-ws4-even-cpu  (needs 4 GPUs)\n");

  std::ostringstream quiet_out;
  dh::ConsoleOptions quiet;
  quiet.quiet = true;
  dh::ConsoleReport silent(quiet_out, 2, quiet);
  silent.progress(verdict(dh::Outcome::Pass, "core/a", "even"));
  EXPECT_EQ(quiet_out.str(), "");
}

TEST(Reports, ConsoleMatrixFailuresOnceAndTheLastLine) {
  const std::vector<dh::Verdict> verdicts = {verdict(dh::Outcome::Pass, "core/a", "even"),
                                             verdict(dh::Outcome::Fail, "core/a", "uneven"),
                                             verdict(dh::Outcome::Skip, "core/b", "even"),
                                             verdict(dh::Outcome::Hang, "core/b", "uneven")};
  std::ostringstream end;
  dh::ConsoleReport summary(end, 4, {});
  summary.finish(verdicts, 52.34);
  const std::string text = end.str();
  EXPECT_NE(text.find("\nscenario  no_hang  equal\n"
                      "core/a       .       F    1/2 fail\n"
                      "core/b       H       -    1/1 hang, 1 skipped\n"
                      "(. passed  F failed  H hang  C crash  M memory_exceeded  E error  s skipped  - not checked; "
                      "equal = equal_to_single)\n"
                      "1 skipped: needs 4 GPUs  (--verbose lists them)\n"),
            std::string::npos)
      << text;
  // Each variant that did not pass: what differed, and its reproduce command once.
  EXPECT_NE(text.find("\nFAIL  core/a:gloo-ws4-uneven-cpu  (0.41 s)\n    equal_to_single failed at compute 1 <&>\n"
                      "      single process: 0.5\n"
                      "    reproduce: distmetrics run scenarios/core/crafted.toml --filter 'core/a:gloo-ws4-uneven-cpu'\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nHANG  core/b:gloo-ws4-uneven-cpu  (0.41 s)\n    rank 2 to blame: rank 2 raised NotComputableError\n"
                      "    rank states: ...\n    reproduce: "),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("reproduce: distmetrics run scenarios/core/crafted.toml --filter 'core/a:gloo-ws4-uneven-cpu'"),
            text.rfind("reproduce: distmetrics run scenarios/core/crafted.toml --filter 'core/a:gloo-ws4-uneven-cpu'"));
  EXPECT_EQ(text.substr(text.rfind("\ndistmetrics: ")),
            "\ndistmetrics: 1 passed, 1 failed, 1 hang, 0 crash, 0 error, 1 skipped in 52.3 s\n")
      << text;

  // --hide-skips: not even the folded line; --quiet: no matrix.
  std::ostringstream hidden;
  dh::ConsoleOptions hide;
  hide.hide_skips = true;
  dh::ConsoleReport(hidden, 4, hide).finish(verdicts, 1.0);
  EXPECT_EQ(hidden.str().find("skipped: needs"), std::string::npos) << hidden.str();
  std::ostringstream quiet_out;
  dh::ConsoleOptions quiet;
  quiet.quiet = true;
  dh::ConsoleReport(quiet_out, 4, quiet).finish(verdicts, 1.0);
  EXPECT_EQ(quiet_out.str().find("no_hang"), std::string::npos) << quiet_out.str();
  EXPECT_NE(quiet_out.str().find("FAIL  core/a:gloo-ws4-uneven-cpu"), std::string::npos) << quiet_out.str();

  std::ostringstream skips;
  dh::ConsoleReport only_skips(skips, 1, quiet);
  only_skips.finish({verdict(dh::Outcome::Skip, "core/b", "even")}, 0.1);
  EXPECT_NE(skips.str().find("every variant was skipped: nothing ran"), std::string::npos);
}

TEST(Reports, ModelMatrixCellsSkipsAndVerdict) {
  // Two skips of one gist (runtime::Unavailable), their sentences different: one group, both
  // sentences under it, whatever the sentences say.
  auto round_robin_skip = verdict(dh::Outcome::Skip, "core/b", "round_robin");
  round_robin_skip.reason = "needs 4 GPUs: only 2 are visible";
  const auto model = dh::report_model(
      {verdict(dh::Outcome::Pass, "core/a", "even"), verdict(dh::Outcome::Fail, "core/a", "uneven"),
       verdict(dh::Outcome::Skip, "core/b", "even"), round_robin_skip, verdict(dh::Outcome::Hang, "core/b", "uneven")},
      "2024-05-01T12:00:00Z", 3.0);
  EXPECT_EQ(model.columns, (std::vector<std::string>{"no_hang", "equal_to_single"}));
  ASSERT_EQ(model.rows.size(), 2u);
  const auto& equal_a = model.rows[0].cells[1];
  EXPECT_EQ(equal_a.worst, "fail");
  EXPECT_EQ(equal_a.counts(), "1/2 fail");
  EXPECT_EQ(model.rows[0].cells[0].counts(), "2/2 pass");
  EXPECT_EQ(model.rows[1].cells[0].worst, "hang");
  EXPECT_EQ(model.rows[1].cells[0].counts(), "1/1 hang");
  EXPECT_EQ(model.rows[1].cells[0].skipped, 2);
  ASSERT_EQ(model.skips.size(), 1u);
  EXPECT_EQ(model.skips[0].reason, "needs 4 GPUs");
  EXPECT_EQ(model.skips[0].count, 2);
  ASSERT_EQ(model.skips[0].reasons.size(), 2u);
  EXPECT_EQ(model.skips[0].reasons[1].first, "needs 4 GPUs: only 2 are visible");
  EXPECT_EQ(model.verdict(), "FAILED: 2 of 3 variants did not pass (1 fail, 1 hang); 2 skipped");
  ASSERT_EQ(model.not_passed().size(), 2u);
  const auto& failure = *model.not_passed()[0];
  ASSERT_EQ(failure.findings.size(), 1u);
  EXPECT_EQ(failure.findings[0].single, "0.5");
  ASSERT_EQ(failure.findings[0].ranks.size(), 2u);
  EXPECT_EQ(failure.findings[0].ranks[1].value, "0.6");

  // Markdown: a matrix row per scenario, one <details> per variant that did not pass, each
  // reproduce command once.
  const std::string md = dh::render_markdown(model);
  EXPECT_NE(md.find("| `core/a` | ✅ 2/2 pass | ❌ 1/2 fail |"), std::string::npos) << md;
  EXPECT_NE(md.find("<details><summary>❌ <b>FAIL</b> <code>core/a:gloo-ws4-uneven-cpu</code>: equal_to_single failed at "
                    "compute 1</summary>"),
            std::string::npos)
      << md;
  const std::string command = "distmetrics run scenarios/core/crafted.toml --filter 'core/a:gloo-ws4-uneven-cpu'";
  EXPECT_NE(md.find(command), std::string::npos);
  EXPECT_EQ(md.find(command), md.rfind(command));
  EXPECT_NE(md.find("2 skipped: needs 4 GPUs</summary>\n\n- 1 × needs 4 GPUs\n- 1 × needs 4 GPUs: only 2 are visible"),
            std::string::npos)
      << md;
  // HTML: escaped, self-contained.
  const std::string html = dh::render_html(model);
  EXPECT_NE(html.find("equal_to_single failed at compute 1 &lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src=\""), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);
}

// Issue 26: the timeline marks where the blamed ranks broke the pattern (the verdict's
// deviation), not only the first collective where the sequences part.
TEST(Reports, TheTimelineMarksTheStepWhereTheBlamedRanksBrokeThePattern) {
  auto trace = [](std::vector<std::pair<std::string, int>> ops) {
    std::vector<dh::TraceEntry> out;
    for (const auto& [op, step] : ops)
      out.push_back({out.size(), op, op == "barrier" ? "" : "float64", op == "barrier" ? std::vector<std::int64_t>{}
                                                                                       : std::vector<std::int64_t>{4},
                     step, "compute"});
    return out;
  };
  // An extra barrier on rank 3 in compute 2 (script step 4); ranks 0-2 wait in compute 3's all_reduce.
  dh::Verdict extra = verdict(dh::Outcome::Hang, "core/b", "uneven");
  for (int r = 0; r < 4; ++r) {
    dh::RankReport rank;
    rank.rank = r;
    rank.state = distmetrics::runtime::RankState::TimedOut;
    rank.trace = r < 3 ? trace({{"all_reduce(sum)", 2}, {"all_reduce(sum)", 4}, {"all_reduce(sum)", 6}})
                       : trace({{"all_reduce(sum)", 2}, {"all_reduce(sum)", 4}, {"barrier", 4}});
    rank.blocked_in = 2;
    extra.ranks.push_back(rank);
  }
  extra.deviation = dh::Deviation{4, 2, 2, "barrier #2", {3}, {0, 1, 2}, {3}};
  // A cached compute 2 on ranks 0 and 2: they passed it without its all_reduce #1, which rank 1
  // issued; their #1 is compute 3's.
  dh::Verdict cached = verdict(dh::Outcome::Hang, "core/c", "uneven");
  for (int r = 0; r < 3; ++r) {
    dh::RankReport rank;
    rank.rank = r;
    rank.state = r == 1 ? distmetrics::runtime::RankState::TimedOut : distmetrics::runtime::RankState::Finished;
    rank.trace = r == 1 ? trace({{"all_reduce(sum)", 2}, {"all_reduce(sum)", 4}, {"all_reduce(sum)", 6}})
                        : trace({{"all_reduce(sum)", 2}, {"all_reduce(sum)", 6}});
    if (r == 1) rank.blocked_in = 2;
    cached.ranks.push_back(rank);
  }
  cached.deviation = dh::Deviation{4, 2, 1, "all_reduce(sum) #1 (float64 [4])", {1}, {0, 2}, {0, 2}};
  // The same on an even split: neither side blamed, both marked where they part.
  dh::Verdict even = extra;
  even.variant.id = dh::variant_id("core/d", "gloo", 4, "uneven", "cpu");
  even.variant.scenario = "core/d";
  even.deviation->blamed.clear();
  const auto model = dh::report_model({extra, cached, even}, "2024-05-01T12:00:00Z", 3.0);
  ASSERT_EQ(model.not_passed().size(), 3u);
  // cell(variant, seq, rank)
  auto cell = [&](std::size_t v, std::uint64_t seq, std::size_t rank) {
    const auto& t = *model.not_passed()[v]->timeline;
    for (std::size_t i = 0; i < t.seqs.size(); ++i)
      if (t.seqs[i] == seq) return t.rows[i][rank];
    ADD_FAILURE() << "no row #" << seq;
    return dh::TimelineCell{};
  };
  ASSERT_TRUE(model.not_passed()[0]->timeline && model.not_passed()[0]->timeline->deviation);
  EXPECT_TRUE(cell(0, 2, 3).deviates);  // rank 3's barrier
  for (std::size_t r = 0; r < 3; ++r) EXPECT_FALSE(cell(0, 2, r).deviates) << r;
  EXPECT_FALSE(cell(0, 1, 3).deviates);  // compute 2's all_reduce: issued by every rank
  ASSERT_TRUE(model.not_passed()[1]->timeline && model.not_passed()[1]->timeline->deviation);
  EXPECT_TRUE(cell(1, 1, 0).deviates && cell(1, 1, 2).deviates);  // what ranks 0, 2 issued at #1 instead
  EXPECT_FALSE(cell(1, 1, 1).deviates);
  EXPECT_EQ(model.not_passed()[1]->timeline->divergence, std::optional<std::uint64_t>(2));  // where the sequences part
  EXPECT_FALSE(cell(1, 2, 1).parted || cell(1, 2, 1).deviates);  // the spared rank's cells stay as they are
  for (std::size_t r = 0; r < 4; ++r) EXPECT_TRUE(cell(2, 2, r).parted && !cell(2, 2, r).deviates) << r;
  const std::string html = dh::render_html(model);
  EXPECT_NE(html.find("<th data-rank=\"3\" class=\"blamed\">rank 3 · to blame"), std::string::npos) << html;
  EXPECT_NE(html.find("<td class=\"op blocked deviates\"><b>barrier</b>"), std::string::npos) << html;
  EXPECT_NE(html.find("<p class=\"deviation-note\"><b>rank 3 broke the pattern at script step 4 &#39;compute&#39; (compute 2)</b>: "
                      "it issued barrier #2 there, which ranks 0, 1, 2 never issued (marked).</p>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<p class=\"deviation-note\"><b>ranks 0, 2 broke the pattern at script step 4 &#39;compute&#39; (compute 2)</b>: "
                      "they passed it without all_reduce(sum) #1 (float64 [4]), which rank 1 issued (marked: what they issued "
                      "at #1 instead).</p>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<p class=\"deviation-note\">The ranks split evenly at script step 4 &#39;compute&#39; (compute 2): rank 3 "
                      "issued barrier #2 there, which ranks 0, 1, 2 never issued; neither side is blamed (dashed: where they part).</p>"),
            std::string::npos)
      << html;
}

// The timeline's "same collective" is the runtime's (runtime::same_collective): the ranks of an
// all_gather contribute different shapes by design, so an uneven gather is not where they
// diverged; the first collective one rank issued and another did not is.
TEST(Reports, TheTimelineDoesNotMarkAnUnevenGatherAsTheDivergence) {
  dh::Verdict v = verdict(dh::Outcome::Hang, "core/b", "uneven");
  for (int r = 0; r < 2; ++r) {
    dh::RankReport rank;
    rank.rank = r;
    rank.state = r == 0 ? distmetrics::runtime::RankState::TimedOut : distmetrics::runtime::RankState::Finished;
    rank.trace.push_back({0, "all_reduce(sum)", "float64", {2}, 2, "compute"});
    rank.trace.push_back({1, "all_gather", "float64", {r == 0 ? 7 : 3}, 2, "compute"});  // 7 rows against 3
    if (r == 0) {
      rank.trace.push_back({2, "barrier", "", {}, 2, "compute"});
      rank.blocked_in = 2;
    }
    v.ranks.push_back(rank);
  }
  const auto model = dh::report_model({v}, "2024-05-01T12:00:00Z", 1.0);
  ASSERT_EQ(model.not_passed().size(), 1u);
  const auto& timeline = model.not_passed()[0]->timeline;
  ASSERT_TRUE(timeline);
  EXPECT_EQ(timeline->divergence, std::optional<std::uint64_t>(2));  // the barrier rank 1 never issued
  // Gathers of other dtypes are different collectives, as the runtime says.
  dh::Verdict dtypes = v;
  dtypes.ranks[1].trace[1].dtype = "int64";
  const auto other = dh::report_model({dtypes}, "2024-05-01T12:00:00Z", 1.0);
  EXPECT_EQ(other.not_passed()[0]->timeline->divergence, std::optional<std::uint64_t>(1));
}

TEST(Reports, JsonFollowsTheContract) {
  const std::vector<dh::Verdict> verdicts = {verdict(dh::Outcome::Pass, "core/a", "even"),
                                             verdict(dh::Outcome::Fail, "core/a", "uneven")};
  const auto j = dh::render_json(dh::report_model(verdicts, "2024-05-01T12:00:00Z", 1.5));
  for (const char* key : {"distmetrics_version", "torch_version", "started", "seconds", "summary", "variants"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["summary"], json({{"pass", 1}, {"fail", 1}, {"hang", 0}, {"crash", 0}, {"memory_exceeded", 0}, {"error", 0},
                                {"skip", 0}, {"total", 2}}));
  const auto& v = j["variants"][1];
  for (const char* key : {"id", "scenario", "file", "backend", "world_size", "shard", "placement", "seed", "outcome", "reason",
                          "seconds", "properties", "diagnosis", "reproduce"})
    EXPECT_TRUE(v.contains(key)) << key;
  EXPECT_EQ(v["outcome"], "fail");
  EXPECT_EQ(v["world_size"], 4);
  EXPECT_TRUE(v["diagnosis"].is_null());
  EXPECT_EQ(v["reproduce"], "distmetrics run scenarios/core/crafted.toml --filter 'core/a:gloo-ws4-uneven-cpu'");
  EXPECT_EQ(v["properties"][0]["name"], "no_hang");
  const auto& p = v["properties"][1];
  EXPECT_EQ(p["name"], "equal_to_single");
  EXPECT_EQ(p["outcome"], "fail");
  EXPECT_EQ(p["single"], 0.5);
  EXPECT_EQ(p["ranks"], json({0.4, 0.6}));
  EXPECT_EQ(p["difference"], 0.1);
}

// The JSON report is a view of the model: each variant exactly as its verdict writes itself,
// the counts and times of the run; `run`'s has no conform matrix.
TEST(Reports, TheJsonViewWritesEachVerdictAsItIs) {
  dh::Verdict hang = verdict(dh::Outcome::Hang, "core/b", "uneven");
  dh::RankReport rank;
  rank.rank = 1;
  rank.state = distmetrics::runtime::RankState::TimedOut;
  rank.trace = {{0, "all_reduce(sum)", "int64", {3}, 2, "compute"}};
  rank.blocked_in = 0;
  hang.ranks = {rank};
  const std::vector<dh::Verdict> verdicts = {verdict(dh::Outcome::Pass, "core/a", "even"),
                                             verdict(dh::Outcome::Fail, "core/a", "uneven"), hang,
                                             verdict(dh::Outcome::Skip, "core/b", "even")};
  const auto j = dh::render_json(dh::report_model(verdicts, "2024-05-01T12:00:00Z", 2.5));
  ASSERT_EQ(j["variants"].size(), 4u);
  for (std::size_t i = 0; i < verdicts.size(); ++i) EXPECT_EQ(j["variants"][i], verdicts[i].to_json()) << i;
  EXPECT_EQ(j["variants"][2]["ranks"][0]["trace"][0]["step"], "compute");
  EXPECT_EQ(j["started"], "2024-05-01T12:00:00Z");
  EXPECT_EQ(j["seconds"], 2.5);
  EXPECT_EQ(j["summary"]["total"], 4);
  EXPECT_EQ(j["summary"]["hang"], 1);
  for (const char* key : {"matrix", "properties", "findings", "plugin"}) EXPECT_FALSE(j.contains(key)) << key;
  EXPECT_FALSE(j["variants"][0].contains("metric"));
}

// conform's layout: rows are the metrics it was given, its columns as given, a variant that hung
// has that outcome in every column (run's shows it only where its row checks), and its JSON adds
// the columns, the matrix, each variant's metric and source, and its own fields.
TEST(Reports, ConformsLayoutRowsAreMetricsAndItsJsonCarriesTheMatrix) {
  const std::vector<dh::Verdict> verdicts = {verdict(dh::Outcome::Pass, "core/a", "even"),
                                             verdict(dh::Outcome::Hang, "core/b", "uneven"),
                                             verdict(dh::Outcome::Fail, "core/a", "uneven")};
  dh::ReportLayout layout;
  layout.by_metric = true;
  layout.metrics = {"MeanAbsoluteError (a)", "MeanAbsoluteError (b)", "MeanAbsoluteError (a)"};
  layout.sources = {"a.py", "b.py", "a.py"};
  layout.columns = {"no_hang", "equal_to_single", "agrees_with_reference"};
  auto model = dh::report_model(verdicts, "2024-05-01T12:00:00Z", 1.0, layout);
  model.json_fields["findings"] = json::array();
  EXPECT_EQ(model.row_kind, "metric");
  ASSERT_EQ(model.rows.size(), 2u);
  EXPECT_EQ(model.rows[0].name, "MeanAbsoluteError (a)");
  EXPECT_EQ(model.rows[0].variants, 2);
  EXPECT_EQ(model.rows[0].cells[1].counts(), "1/2 fail");
  EXPECT_FALSE(model.rows[0].cells[2].checked());  // no verdict of that row judged it
  EXPECT_EQ(model.rows[1].cells[2].worst, "hang");  // a hang is that outcome in every column
  const auto j = dh::render_json(model);
  EXPECT_EQ(j["properties"], json(layout.columns));
  ASSERT_EQ(j["matrix"].size(), 3u);
  EXPECT_EQ(j["matrix"][0], json({{"metric", "MeanAbsoluteError (a)"}, {"variant", "core/a:gloo-ws4-even-cpu"},
                                  {"scenario", "core/a"}, {"backend", "gloo"}, {"world_size", 4}, {"shard", "even"},
                                  {"placement", "cpu"}, {"outcome", "pass"},
                                  {"properties", {{"no_hang", "pass"}, {"equal_to_single", "pass"},
                                                  {"agrees_with_reference", nullptr}}}}));
  EXPECT_EQ(j["matrix"][1]["properties"],
            json({{"no_hang", "hang"}, {"equal_to_single", "hang"}, {"agrees_with_reference", "hang"}}));
  EXPECT_EQ(j["variants"][1]["metric"], "MeanAbsoluteError (b)");
  EXPECT_EQ(j["variants"][1]["source"], "b.py");
  EXPECT_EQ(j["findings"], json::array());
  // run's layout of the same verdicts: the hang only in the columns its row checks.
  const auto run = dh::report_model(verdicts, "2024-05-01T12:00:00Z", 1.0);
  EXPECT_EQ(run.columns, (std::vector<std::string>{"no_hang", "equal_to_single"}));
  EXPECT_EQ(run.rows[1].name, "core/b");
  EXPECT_EQ(run.rows[1].cells[0].worst, "hang");
  EXPECT_FALSE(run.rows[1].cells[1].checked());
  layout.metrics.pop_back();  // a metric short
  EXPECT_THROW(dh::report_model(verdicts, "", 1.0, layout), std::invalid_argument);
}

TEST(Reports, JunitHasASuitePerScenarioAndEscapes) {
  const auto xml = dh::render_junit(dh::report_model(
      {verdict(dh::Outcome::Pass, "core/a", "even"), verdict(dh::Outcome::Fail, "core/a", "uneven"),
       verdict(dh::Outcome::Skip, "core/b", "even"), verdict(dh::Outcome::Hang, "core/b", "uneven")},
      "2024-05-01T12:00:00Z", 2.0));
  EXPECT_NE(xml.find("<testsuite name=\"core/a\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testsuite name=\"core/b\" tests=\"2\" failures=\"0\" errors=\"1\" skipped=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"core/a\" name=\"gloo-ws4-even-cpu\" time=\"0.410\"/>"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<skipped message=\"needs 4 GPUs\"/>"), std::string::npos);
  EXPECT_NE(xml.find("compute 1 &lt;&amp;&gt;"), std::string::npos);
  EXPECT_NE(xml.find("<error message=\"rank 2 to blame"), std::string::npos);
  EXPECT_NE(xml.find("reproduce: distmetrics run"), std::string::npos);
}

TEST(Reports, ExitCodesByPriority) {
  using O = dh::Outcome;
  auto code = [](std::vector<O> outcomes, bool bad = false) {
    std::vector<dh::Verdict> vs;
    for (auto o : outcomes) vs.push_back(verdict(o, "core/a", "even"));
    return dh::exit_code(vs, bad);
  };
  EXPECT_EQ(code({}), 0);
  EXPECT_EQ(code({O::Pass, O::Skip}), 0);
  EXPECT_EQ(code({O::Skip}), 0);
  EXPECT_EQ(code({O::Pass, O::Fail}), 1);
  EXPECT_EQ(code({O::Error}), 1);
  EXPECT_EQ(code({O::Fail, O::Hang}), 3);
  EXPECT_EQ(code({O::Hang, O::Crash, O::Fail}), 4);
  EXPECT_EQ(code({O::Crash}, true), 2);
  EXPECT_EQ(code({O::MemoryExceeded}), 6);
  EXPECT_EQ(code({O::Hang, O::MemoryExceeded, O::Error}), 6);
  EXPECT_EQ(code({O::MemoryExceeded, O::Crash}), 4);
}

// A rank past its memory limit is an outcome of its own in every view: its symbol, the last line
// (which counts it only when it occurs, so that the line tools grep is otherwise unchanged),
// JUnit's error type, the JSON summary, the Markdown mark and the HTML's colours.
TEST(Reports, MemoryExceededIsAnOutcomeOfItsOwnInEveryView) {
  dh::Verdict memory = verdict(dh::Outcome::MemoryExceeded, "core/b", "uneven");
  memory.reason = "rank 1 to blame: rank 1 went past its memory limit of 6.0 GiB";
  memory.diagnosis = "rank 1 went past its memory limit of 6.0 GiB (an allocation failed)";
  const std::vector<dh::Verdict> verdicts = {verdict(dh::Outcome::Pass, "core/a", "even"), memory};
  std::ostringstream progress;
  dh::ConsoleReport console(progress, 2, {});
  for (const auto& v : verdicts) console.progress(v);
  console.finish(verdicts, 1.0);
  const std::string text = progress.str();
  EXPECT_EQ(text.rfind(".M", 0), 0u) << text;
  EXPECT_NE(text.find("core/b       M       -    1/1 memory_exceeded\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nMEMORY_EXCEEDED  core/b:gloo-ws4-uneven-cpu  (0.41 s)\n    rank 1 to blame: rank 1 went past its memory limit"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\ndistmetrics: 1 passed, 0 failed, 0 hang, 0 crash, 1 memory_exceeded, 0 error, 0 skipped in 1.0 s\n"),
            std::string::npos)
      << text;
  const auto model = dh::report_model(verdicts, "2024-05-01T12:00:00Z", 1.0);
  const auto j = dh::render_json(model);
  EXPECT_EQ(j["summary"]["memory_exceeded"], 1);
  EXPECT_EQ(j["variants"][1]["outcome"], "memory_exceeded");
  const auto xml = dh::render_junit(model);
  EXPECT_NE(xml.find("<testsuite name=\"core/b\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\""), std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<error message=\"rank 1 to blame: rank 1 went past its memory limit of 6.0 GiB\" type=\"memory_exceeded\">"),
            std::string::npos)
      << xml;
  EXPECT_EQ(model.worst, "memory_exceeded");
  EXPECT_EQ(model.verdict(), "FAILED: 1 of 2 variants did not pass (1 memory_exceeded)");
  EXPECT_NE(dh::render_markdown(model).find("💾"), std::string::npos);
  const std::string page = dh::render_html(model);
  EXPECT_NE(page.find(".o-memory_exceeded{--c:#fff;--bg:#0a3069;--solid:#0a3069}"), std::string::npos);
  EXPECT_NE(page.find("data-kind=\"memory_exceeded\">1 memory_exceeded</span>"), std::string::npos);
}

// --- Root causes: derived from which properties failed together, and how --------------------

namespace {
dh::RootCause cause_of(const Fixture& f) {
  const auto results = f.check();
  const auto cause = dh::find_root_cause({f.s, f.v, f.plan, f.single, f.ranks}, results);
  if (!cause) {
    ADD_FAILURE() << "no root cause";
    return {};
  }
  return *cause;
}
}  // namespace

TEST(RootCause, RanksThatDisagreeAreNoSync) {
  Fixture f;
  f.ranks[0] = observation(0, {value(0.4), value(0.4), value(0.7), value(0.7)}, f.plan);
  f.ranks[1] = observation(1, {value(0.6), value(0.6), value(0.8), value(0.8)}, f.plan);
  const auto c = cause_of(f);
  EXPECT_EQ(c.property, "equal_to_single");
  EXPECT_EQ(c.headline.rfind("no sync", 0), 0u) << c.headline;
  EXPECT_EQ(c.consequences, (std::vector<std::string>{"ranks_agree", "update_after_compute", "reset_replay"}));
}

TEST(RootCause, RanksThatAgreeOnAWrongValueAreAWrongReduction) {
  Fixture f;
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, {value(1.0), value(1.0), value(1.5), value(1.5)}, f.plan);
  const auto c = cause_of(f);
  EXPECT_EQ(c.headline.rfind("the sync reduces wrongly", 0), 0u) << c.headline;
  EXPECT_NE(c.hint.find("SUM"), std::string::npos) << c.hint;
}

TEST(RootCause, AChangedStateDigestIsAnInPlaceSyncAndLeadsTheLaterFailures) {
  Fixture f;
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, {value(0.5), value(0.5), value(0.8125), value(0.75)}, f.plan);
  f.ranks[0].computes[0].digest_after = "reduced";
  const auto c = cause_of(f);
  EXPECT_EQ(c.property, "idempotent");
  EXPECT_EQ(c.headline.rfind("compute() changes the local state", 0), 0u) << c.headline;
  EXPECT_EQ(c.consequences, (std::vector<std::string>{"update_after_compute"}));
  // Applied to a verdict: the cause leads, the consequence is marked.
  dh::Verdict v;
  v.outcome = dh::Outcome::Fail;
  v.properties = f.check();
  dh::apply_root_cause(v, c);
  EXPECT_EQ(v.reason.rfind("root cause: compute() changes the local state", 0), 0u) << v.reason;
  EXPECT_EQ(v.properties.front().name, "idempotent");
  EXPECT_EQ(v.property("update_after_compute")->consequence_of, "idempotent");
  ASSERT_TRUE(v.root_cause);
  EXPECT_EQ(v.root_cause->consequences, std::vector<std::string>{"update_after_compute"});
}

TEST(RootCause, BatchSizesThatDifferWithinFloat32RoundingAreRoundingNotPerBatchStatistics) {
  Fixture f;
  f.s.tolerance.rtol = 1e-12;
  f.s.tolerance.atol = 0;
  f.single.other_batch_sizes = {{1, value(0.75 * (1 + 3e-7))}, {9, value(0.75)}};
  auto c = cause_of(f);
  EXPECT_EQ(c.property, "batch_invariant");
  EXPECT_EQ(c.headline.rfind("float32 rounding", 0), 0u) << c.headline;
  f.single.other_batch_sizes = {{1, value(0.7)}, {9, value(0.75)}};
  c = cause_of(f);
  EXPECT_EQ(c.headline, "the result depends on the batch size: per-batch statistics");
}

TEST(RootCause, ALaterComputeOffByFloat32RoundingIsRoundingNotACache) {
  // The default script: computes 1 and 2 at 50% (0.5), compute 3 after the rest (0.75), reset,
  // replay, compute 4 (0.75). Compute 3 off by 3e-7 relative on every rank: the totals' float32
  // rounding (torchmetrics' MeanMetric on Ignite PR #2959's large counts).
  Fixture f;
  f.s.tolerance.rtol = 1e-12;
  f.s.tolerance.atol = 0;
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, {value(0.5), value(0.5), value(0.75 * (1 + 3e-7)), value(0.75)}, f.plan);
  EXPECT_EQ(failing(f.check()), (std::vector<std::string>{"update_after_compute"}));
  auto c = cause_of(f);
  EXPECT_EQ(c.property, "update_after_compute");
  EXPECT_EQ(c.headline.rfind("float32 rounding at a later compute", 0), 0u) << c.headline;
  EXPECT_NE(c.evidence.find("relative difference of 3e-07"), std::string::npos) << c.evidence;
  // Beyond float32 rounding it is still what an earlier compute left behind.
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, {value(0.5), value(0.5), value(0.75 * (1 + 1e-3)), value(0.75)}, f.plan);
  c = cause_of(f);
  EXPECT_EQ(c.headline.rfind("an earlier compute changes what a later one gives", 0), 0u) << c.headline;
}

TEST(RootCause, OnlyTheReplayDifferingIsAResetThatForgets) {
  Fixture f;
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, {value(0.5), value(0.5), value(0.75), value(0.6)}, f.plan);
  const auto c = cause_of(f);
  EXPECT_EQ(c.property, "reset_replay");
  EXPECT_TRUE(c.consequences.empty());
}

// --- Waits that gave up after a peer raised or left ------------------------------------------

namespace {
// The error as step_error() records it where it was caught: a wait that gave up says so in
// wait_timed_out (is_wait_timeout of the exception).
dh::RankObservation with_error(int rank, const std::string& type, const std::string& message, double at) {
  dh::RankObservation o;
  o.rank = rank;
  o.error = dh::StepError{1, "compute", type, message};
  o.error->at = at;
  o.error->wait_timed_out = dh::is_wait_timeout(std::runtime_error(message));
  return o;
}
}  // namespace

TEST(AbandonedWait, ARaiseBeforeAPeersTimeoutIsTheCause) {
  const auto blame = distmetrics::harness::judging::find_abandoned_wait({with_error(0, "Error", "Operation timed out!", 1001.5),
                                              with_error(1, "NotComputableError", "no samples on this rank", 1000.0)});
  ASSERT_TRUE(blame);
  EXPECT_EQ(blame->blamed, 1);
  EXPECT_EQ(blame->waiting, (std::vector<int>{0}));
  EXPECT_EQ(blame->headline, "rank 1 raised NotComputableError at compute (script step 2) and left the script; rank 0 waited "
                             "for it until its wait timed out 1.5 s later");
  EXPECT_NE(blame->detail.find("  +0 s  rank 1 raised NotComputableError"), std::string::npos) << blame->detail;
  EXPECT_NE(blame->detail.find("  +1.5 s  rank 0 raised Error"), std::string::npos) << blame->detail;
}

TEST(AbandonedWait, ARaiseAfterTheTimeoutIsAConsequenceAndARankThatLeftIsBlamed) {
  dh::RankObservation finished;
  finished.rank = 2;
  const auto blame = distmetrics::harness::judging::find_abandoned_wait({with_error(0, "Error", "Operation timed out!", 1000.0),
                                              with_error(1, "SyncError", "peer gone", 1000.2), finished});
  ASSERT_TRUE(blame);
  EXPECT_EQ(blame->blamed, 2);
  // Every rank's wait timing out together is a stalled backend, no one rank to blame.
  EXPECT_FALSE(distmetrics::harness::judging::find_abandoned_wait({with_error(0, "Error", "Operation timed out!", 1000.0),
                                        with_error(1, "Error", "Operation timed out!", 1000.1)}));
  // No timeout, no abandoned wait.
  EXPECT_FALSE(distmetrics::harness::judging::find_abandoned_wait({with_error(0, "InputError", "bad input", 1000.0), finished}));
}

// Whether an error is a wait that gave up is decided where it is caught, into a typed field that
// travels with the observation; the blame reads the field, not the message.
TEST(AbandonedWait, AWaitThatGaveUpIsATypedFieldSetWhereTheErrorIsCaught) {
  using distmetrics::runtime::CollectiveError;
  using distmetrics::runtime::CollectiveFailure;
  const distmetrics::runtime::CollectiveRecord allreduce{2, "all_reduce(sum)", "float64", {2}};
  EXPECT_TRUE(dh::step_error(1, "compute", CollectiveError(0, CollectiveFailure::Timeout, allreduce, "no peer")).wait_timed_out);
  EXPECT_FALSE(dh::step_error(1, "compute", CollectiveError(0, CollectiveFailure::Mismatch, allreduce, "timeout")).wait_timed_out);
  EXPECT_TRUE(dh::step_error(1, "compute", distmetrics::runtime::BackendTimeout("gloo work still pending")).wait_timed_out);
  // A metric's own c10d wait raises a plain error: its words are all it has.
  EXPECT_TRUE(dh::step_error(1, "compute", std::runtime_error("allreduce timed out")).wait_timed_out);
  EXPECT_FALSE(dh::step_error(1, "compute", std::runtime_error("bad input")).wait_timed_out);

  // The field travels in the observation's JSON.
  dh::RankObservation waited = with_error(0, "Error", "Operation timed out!", 1001.5);
  EXPECT_TRUE(dh::RankObservation::from_json(waited.to_json()).error->wait_timed_out);

  // The blame decides from the field: the same words without it are a raise, and a wait that
  // gave up in other words is still a wait.
  dh::RankObservation raised = with_error(1, "NotComputableError", "no samples on this rank", 1000.0);
  dh::RankObservation worded = waited;
  worded.error->wait_timed_out = false;
  EXPECT_FALSE(distmetrics::harness::judging::find_abandoned_wait({worded, raised}));
  dh::RankObservation silent = with_error(0, "DistBackendError", "the work was aborted", 1001.5);
  silent.error->wait_timed_out = true;
  const auto blame = distmetrics::harness::judging::find_abandoned_wait({silent, raised});
  ASSERT_TRUE(blame);
  EXPECT_EQ(blame->blamed, 1);
  EXPECT_EQ(blame->waiting, (std::vector<int>{0}));
}

// A skipped property says why in a typed field the JSON report carries ("why"), set where the
// skip is made; its message stays what people read.
TEST(PropertySkip, WhyItWasNotJudgedIsATypedFieldOfTheReport) {
  dh::PropertyResult unreached;
  unreached.name = "merge_state";
  unreached.set_not_judged("no rank reached compute 2");
  EXPECT_EQ(unreached.outcome, dh::Outcome::Skip);
  EXPECT_EQ(unreached.message, "merge_state: not judged: no rank reached compute 2");
  EXPECT_EQ(unreached.to_json().at("why"), "not_judged");

  dh::PropertyResult other;  // a skip made without saying more does not apply to the metric
  other.name = "agrees_with_reference";
  other.outcome = dh::Outcome::Skip;
  other.message = "agrees_with_reference skipped: no rank reached a compute";
  EXPECT_EQ(other.to_json().at("why"), "not_applicable");

  dh::PropertyResult held;
  held.name = "idempotent";
  EXPECT_FALSE(held.to_json().contains("why"));
}

// --- Empty batches, NaN after them, float32 cancellation, float32 golden values ---------------

namespace {
dh::ComputeResult nan_value() {
  dh::ComputeResult r;
  r.value = "nan";  // as metrics::Value writes a NaN
  return r;
}
double f32(double v) { return static_cast<double>(static_cast<float>(v)); }
}  // namespace

TEST(Checks, AnEmptyBatchTheMetricRejectsFailsAcceptsEmptyBatchAlone) {
  Fixture f;
  EXPECT_EQ(f.get("accepts_empty_batch").outcome, dh::Outcome::Pass);  // judged whenever the script has 'update empty'
  f.ranks[0].empty_rejected = dh::StepError{3, "update", "ValueError", "Expected a non-empty input"};
  EXPECT_EQ(failing(f.check()), (std::vector<std::string>{"accepts_empty_batch"}));
  const auto p = f.get("accepts_empty_batch");
  EXPECT_NE(p.message.find("rank 0 rejects an empty batch (ValueError: Expected a non-empty input)"), std::string::npos)
      << p.message;
  EXPECT_NE(p.message.find("rank 0: script step 4 ('update empty ranks=0') raised ValueError"), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("the rest of the script ran without the empty update"), std::string::npos) << p.message;
  const auto c = cause_of(f);
  EXPECT_EQ(c.property, "accepts_empty_batch");
  EXPECT_EQ(c.headline, "the metric rejects an empty batch: ValueError: Expected a non-empty input");
  EXPECT_NE(c.evidence.find("every other property held"), std::string::npos) << c.evidence;
}

TEST(Checks, AnEmptyBatchNotFedByADeclaredConventionIsNotApplicableNeverHeld) {
  Fixture f;
  f.ranks[0].empty_not_fed = "FID declares that it rejects a batch of no rows: not fed one";
  f.ranks[1].empty_not_fed = f.ranks[0].empty_not_fed;
  EXPECT_TRUE(failing(f.check()).empty());
  const auto p = f.get("accepts_empty_batch");
  EXPECT_EQ(p.outcome, dh::Outcome::Skip);  // not judged: never drawn as a pass
  EXPECT_EQ(p.message, "accepts_empty_batch: not applicable: FID declares that it rejects a batch of no rows: not fed one");
  // The observation crosses the process boundary with it.
  EXPECT_EQ(dh::RankObservation::from_json(f.ranks[0].to_json()).empty_not_fed, f.ranks[0].empty_not_fed);
}

TEST(RootCause, AnEmptyBatchTheMetricRejectsNeverHidesADistributedFailure) {
  Fixture f;
  f.ranks[0] = observation(0, {value(0.4), value(0.4), value(0.7), value(0.7)}, f.plan);
  f.ranks[1] = observation(1, {value(0.6), value(0.6), value(0.8), value(0.8)}, f.plan);
  f.ranks[0].empty_rejected = dh::StepError{3, "update", "ValueError", "Expected a non-empty input"};
  const auto c = cause_of(f);
  EXPECT_EQ(c.property, "equal_to_single");
  EXPECT_EQ(c.headline.rfind("no sync", 0), 0u) << c.headline;
  EXPECT_EQ(c.consequences, (std::vector<std::string>{"ranks_agree", "update_after_compute", "reset_replay"}));
  dh::Verdict v;
  v.outcome = dh::Outcome::Fail;
  v.properties = f.check();
  dh::apply_root_cause(v, c);
  EXPECT_EQ(v.reason.rfind("root cause: no sync", 0), 0u) << v.reason;
  ASSERT_NE(v.property("accepts_empty_batch"), nullptr);
  EXPECT_EQ(v.property("accepts_empty_batch")->outcome, dh::Outcome::Fail);
  EXPECT_EQ(v.property("accepts_empty_batch")->consequence_of, "");  // a finding of its own
}

TEST(RootCause, ANanRightAfterAnEmptyBatchIsTheEmptyBatchNotACache) {
  // The default script: compute 1 and 2 at 50%, then 'update empty ranks=0', 'update rest',
  // 'update empty', compute 3 (NaN here), reset, replay (no empty batch), compute 4.
  Fixture f;
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, {value(0.5), value(0.5), nan_value(), value(0.75)}, f.plan);
  EXPECT_EQ(failing(f.check()), (std::vector<std::string>{"update_after_compute"}));
  const auto c = cause_of(f);
  EXPECT_EQ(c.property, "update_after_compute");
  EXPECT_EQ(c.headline.rfind("an empty batch makes the result NaN", 0), 0u) << c.headline;
  EXPECT_NE(c.evidence.find("compute 3 (script step 7) is NaN on rank(s) 0, 1, the first compute after 'update empty "
                            "ranks=0' (script step 4, rank(s) 0)"),
            std::string::npos)
      << c.evidence;
  // A NaN before any empty batch has another cause.
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, {nan_value(), nan_value(), value(0.75), value(0.75)}, f.plan);
  EXPECT_EQ(cause_of(f).headline.rfind("an empty batch", 0), std::string::npos) << cause_of(f).headline;
  // And a wrong number after more updates is still what an earlier compute left behind.
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, {value(0.5), value(0.5), value(0.8), value(0.75)}, f.plan);
  EXPECT_EQ(cause_of(f).headline.rfind("an earlier compute changes what a later one gives", 0), 0u) << cause_of(f).headline;
}

TEST(RootCause, Float32CancellationIsNotPerBatchStatistics) {
  // R2 or a correlation on a constant target in float32: E[t^2] - E[t]^2 is 0 in exact
  // arithmetic, and its rounding noise decides the value at every batching.
  Fixture f;
  f.single.full = value(f32(-1234.567));
  f.single.other_batch_sizes = {{1, value(f32(8765.4321))}, {9, value(f32(-3.25e6))}};
  auto c = cause_of(f);
  EXPECT_EQ(c.property, "batch_invariant");
  EXPECT_EQ(c.headline.rfind("float32 cancellation", 0), 0u) << c.headline;
  f.single.other_batch_sizes = {{1, nan_value()}, {9, value(f32(-1000.1))}};  // finite and NaN by batching
  EXPECT_EQ(cause_of(f).headline.rfind("float32 cancellation", 0), 0u) << cause_of(f).headline;
  // A per-batch mean in float32 moves the value a little: per-batch statistics.
  f.single.full = value(f32(0.75));
  f.single.other_batch_sizes = {{1, value(f32(0.71))}, {9, value(f32(0.74))}};
  EXPECT_EQ(cause_of(f).headline, "the result depends on the batch size: per-batch statistics");
  // The same jumps in float64: no float32 evidence.
  f.single.full = value(-1234.5670000001);
  f.single.other_batch_sizes = {{1, value(8765.43210000001)}, {9, value(-3.25e6 + 1e-4)}};
  EXPECT_EQ(cause_of(f).headline, "the result depends on the batch size: per-batch statistics");
}

TEST(Checks, GoldenToleranceFollowsTheResultsFloat32Precision) {
  Fixture f;
  f.s.properties.push_back("golden");
  f.s.golden = dh::Golden{1.0 / 3, 1e-12, 0};
  const double third32 = f32(1.0 / 3);  // what a float32 library computes, exactly
  f.single.at_compute = {value(0.5), value(0.5), value(third32), value(third32)};
  f.single.full = value(third32);
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, f.single.at_compute, f.plan);
  auto p = f.get("golden");
  EXPECT_EQ(p.outcome, dh::Outcome::Pass) << p.message;
  EXPECT_NE(p.message.find("widened from rtol 1e-12, atol 0: the result is float32 (unit roundoff 6e-8)"), std::string::npos)
      << p.message;
  // Float32's precision, not a free pass: a float32 value 1e-5 off fails.
  const double off = f32(1.0 / 3 * (1 + 1e-5));
  f.single.at_compute[2] = f.single.at_compute[3] = f.single.full = value(off);
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, f.single.at_compute, f.plan);
  p = f.get("golden");
  EXPECT_EQ(p.outcome, dh::Outcome::Fail) << p.message;
  EXPECT_NE(p.message.find("tolerance: rtol 1e-06, atol 1e-09"), std::string::npos) << p.message;
  // A float64 result keeps the scenario's tolerance.
  const double close64 = 1.0 / 3 + 1e-10;
  f.single.at_compute[2] = f.single.at_compute[3] = f.single.full = value(close64);
  for (int r = 0; r < 2; ++r) f.ranks[r] = observation(r, f.single.at_compute, f.plan);
  p = f.get("golden");
  EXPECT_EQ(p.outcome, dh::Outcome::Fail) << p.message;
  EXPECT_EQ(p.message.find("widened"), std::string::npos) << p.message;
}

TEST(Checks, AFloat32ResultIsToldByItsValues) {
  auto dtype = [](const json& v) { return dh::observed_float_dtype({&v}); };
  EXPECT_EQ(dtype(json(f32(0.1))), "float32");
  EXPECT_EQ(dtype(json(0.1)), "");
  EXPECT_EQ(dtype(json(0.75)), "");     // a short binary fraction: exact in any precision
  EXPECT_EQ(dtype(json(3.0)), "");      // whole numbers say nothing
  EXPECT_EQ(dtype(json(16777217.0)), "");
  EXPECT_EQ(dtype(json{{"dtype", "float64"}, {"shape", {2}}, {"values", {f32(0.1), 0.5}}}), "float32");
  EXPECT_EQ(dtype(json{{"dtype", "float64"}, {"shape", {2}}, {"values", {f32(0.1), 0.1}}}), "");
  EXPECT_EQ(dtype(json{{"precision", f32(0.3)}, {"recall", {{"dtype", "int64"}, {"shape", {1}}, {"values", {3}}}}}), "float32");
}

TEST(Checks, BatchInvariantToleranceFollowsTheResultsFloat32Precision) {
  // A float32 library sums in another order at another batch size: float32 rounding, not a
  // formula that depends on the batching.
  Fixture f;
  f.s.tolerance.rtol = 1e-12;
  f.s.tolerance.atol = 0;
  const double third32 = f32(1.0 / 3);
  f.single.full = value(third32);
  f.single.other_batch_sizes = {{1, value(f32(1.0 / 3 * (1 + 2e-7)))}, {9, value(third32)}};
  auto p = f.get("batch_invariant");
  EXPECT_EQ(p.outcome, dh::Outcome::Pass) << p.message;
  EXPECT_NE(p.message.find("widened from rtol 1e-12, atol 0: the result is float32"), std::string::npos) << p.message;
  // Float32's precision, not a free pass: 1e-5 apart fails, with the widened tolerance shown.
  f.single.other_batch_sizes = {{1, value(f32(1.0 / 3 * (1 + 1e-5)))}, {9, value(third32)}};
  p = f.get("batch_invariant");
  EXPECT_EQ(p.outcome, dh::Outcome::Fail) << p.message;
  EXPECT_NE(p.message.find("tolerance: rtol 1e-06, atol 1e-09; integer tensors exact (widened from rtol 1e-12"),
            std::string::npos)
      << p.message;
  // float64 results keep the scenario's tolerance.
  f.single.full = value(1.0 / 3);
  f.single.other_batch_sizes = {{1, value(1.0 / 3 + 1e-10)}, {9, value(1.0 / 3)}};
  p = f.get("batch_invariant");
  EXPECT_EQ(p.outcome, dh::Outcome::Fail) << p.message;
  EXPECT_EQ(p.message.find("widened"), std::string::npos) << p.message;
}

TEST(Checks, ADeclaredNoDataValueMeetsTheExpectedErrorOnlyWhenEveryoneAgrees) {
  // torchmetrics and torcheval return 0 (or NaN) with a warning when no rank has a sample: a
  // declared convention, judged by agreement with the single process, not a missing error.
  Fixture f;
  f.s.expect.error = "NotComputableError";
  f.s.script = {dh::parse_step("update rest"), dh::parse_step("compute")};
  f.s.properties = {"ranks_agree"};
  f.plan = dh::simulate_script(f.s.script, {0, 0});
  f.single.at_compute = {value(0.0)};
  f.ranks = {observation(0, {value(0.0)}, f.plan), observation(1, {value(0.0)}, f.plan)};
  // Not declared: a value where the error is expected fails.
  EXPECT_EQ(f.get("expected_error").outcome, dh::Outcome::Fail);
  f.s.expect.no_data_value = "zero";
  auto p = f.get("expected_error");
  EXPECT_EQ(p.outcome, dh::Outcome::Pass) << p.message;
  EXPECT_NE(p.message.find("declared convention (no data anywhere: compute() returns zero instead of raising "
                           "NotComputableError): every rank and the single process returned 0 at compute 1"),
            std::string::npos)
      << p.message;
  // NaN everywhere agrees too.
  f.s.expect.no_data_value = "nan";
  f.single.at_compute = {nan_value()};
  f.ranks = {observation(0, {nan_value()}, f.plan), observation(1, {nan_value()}, f.plan)};
  EXPECT_EQ(f.get("expected_error").outcome, dh::Outcome::Pass) << f.get("expected_error").message;
  // One rank that differs, or one that raises alone: the convention does not cover it.
  f.ranks[1] = observation(1, {value(0.5)}, f.plan);
  p = f.get("expected_error");
  EXPECT_EQ(p.outcome, dh::Outcome::Fail) << p.message;
  EXPECT_NE(p.message.find("the metric declares that compute() with no data anywhere returns nan"), std::string::npos)
      << p.message;
  f.ranks[1] = observation(1, {raised("NotComputableError")}, f.plan);
  EXPECT_EQ(f.get("expected_error").outcome, dh::Outcome::Fail);
  // Everyone raising still holds.
  f.single.at_compute = {raised("NotComputableError")};
  f.ranks[0] = observation(0, {raised("NotComputableError")}, f.plan);
  EXPECT_EQ(f.get("expected_error").outcome, dh::Outcome::Pass);
}

// A variant that died keeps the verdicts judged before: every view lists them under its outcome,
// a kept failure as a finding; a property not judged is never drawn as passed.
TEST(Reports, KeptVerdictsOfAVariantThatDiedAreListedAndNotJudgedIsNeverPassed) {
  dh::Verdict v;
  v.variant.id = "core/a:gloo-ws2-even-cpu";
  v.variant.scenario = "core/a";
  v.variant.backend = "gloo";
  v.variant.world_size = 2;
  v.variant.shard = "even";
  v.variant.placement = "cpu";
  v.outcome = dh::Outcome::Crash;
  v.reason = "rank 1 to blame: rank 1 crashed";
  v.diagnosis = "rank 1 crashed (killed by signal 6)";
  dh::PropertyResult no_hang{"no_hang", dh::Outcome::Pass, "no_hang held"};
  dh::PropertyResult equal{"equal_to_single", dh::Outcome::Fail, "equal_to_single failed at compute 1 of 1: every rank\n  rank 0: 2\n"};
  equal.judged_before_death = "judged on script steps 1-2 ('update 50%' .. 'compute'), which every rank completed";
  dh::PropertyResult agree{"ranks_agree", dh::Outcome::Pass, "ranks_agree held at compute 1 on all 2 rank(s)"};
  agree.judged_before_death = equal.judged_before_death;
  dh::PropertyResult idem{"idempotent", dh::Outcome::Skip, "idempotent: not judged: its evidence lies in script steps not every rank completed"};
  idem.judged_before_death = "not judged";
  v.properties = {no_hang, equal, agree, idem};
  const auto model = dh::report_model({v}, "2024-05-01T12:00:00Z", 1.0);
  // The matrix shows the crash, not a pass, in every column the row checks.
  for (const auto& [column, cell] : model.variants.at(0).cells) EXPECT_EQ(cell, "crash") << column;
  ASSERT_EQ(model.variants.at(0).findings.size(), 1u);  // the kept failure is a finding
  EXPECT_EQ(model.variants.at(0).findings[0].property, "equal_to_single");
  // Each view indents and escapes in its own way: the lines' words.
  const std::string kept = "equal_to_single failed (judged on script steps 1-2";
  const std::string held = "ranks_agree held (judged on script steps 1-2";
  const std::string not_judged = "idempotent: not judged: its evidence lies in script steps not every rank completed";
  EXPECT_EQ(v.kept_verdicts_text(),
            "judged before the variant died (the steps every rank completed):\n  equal_to_single failed (" +
                equal.judged_before_death + "):\n    equal_to_single failed at compute 1 of 1: every rank\n      rank 0: 2\n  "
                "ranks_agree held (" + equal.judged_before_death + ")\n  " + not_judged + "\n");
  std::ostringstream console;
  dh::render_console(model, console, {});
  for (const std::string& text : {console.str(), dh::render_junit(model), dh::render_markdown(model)}) {
    EXPECT_NE(text.find(kept), std::string::npos) << text;
    EXPECT_NE(text.find(held), std::string::npos) << text;
    EXPECT_NE(text.find(not_judged), std::string::npos) << text;
    EXPECT_EQ(text.find("idempotent held"), std::string::npos) << text;
  }
  const std::string html = dh::render_html(model);
  EXPECT_NE(html.find("<summary>judged before the variant died</summary>"), std::string::npos);
  EXPECT_NE(html.find("idempotent: not judged: "), std::string::npos);
  const auto json = dh::render_json(model);
  const auto& props = json.at("variants").at(0).at("properties");
  ASSERT_EQ(props.size(), 4u);
  EXPECT_EQ(props[1].at("judged_before_death"), equal.judged_before_death);
  EXPECT_EQ(props[3].at("outcome"), "skip");
  EXPECT_EQ(props[3].at("judged_before_death"), "not judged");
  EXPECT_FALSE(props[0].contains("judged_before_death"));
}
