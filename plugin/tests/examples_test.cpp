// The example plugins as a user gets them: built outside this tree against the installed
// package (fixture plugin_examples_install_and_build), checked by the INSTALLED
// `distmetrics conform` on examples/plugins/scenarios (world sizes 1, 2 and 4 on gloo; even,
// uneven and empty_rank shards; and one ws2 variant that checks MeanAbsoluteError's saved
// state). The correct one passes everything; each broken one is flagged with the property its
// bug class breaks.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "conform_support.h"

namespace {

using conform_test::failed_properties;
using conform_test::quote;
using conform_test::variant;

const std::string kDistmetrics = std::string(EXAMPLES_OUT) + "/prefix/bin/distmetrics";

conform_test::Run conform_example(const std::string& name) {
  const std::string plugin = std::string(EXAMPLES_OUT) + "/build/lib" + name + ".so";
  return conform_test::run_command(kDistmetrics, "conform --plugin " + quote(plugin) + " " + quote(EXAMPLE_SCENARIOS),
                                   name + ".json");
}

// Every variant of the report, by world size and shard.
struct Row {
  std::string id, shard, outcome, reason;
  int world_size;
  std::set<std::string> failed;
};
std::vector<Row> rows(const nlohmann::json& report) {
  std::vector<Row> out;
  for (const auto& v : report.at("variants"))
    out.push_back({v.at("id"), v.at("shard"), v.at("outcome"), v.at("reason").is_string() ? v.at("reason").get<std::string>() : "",
                   v.at("world_size"), failed_properties(v)});
  return out;
}

TEST(InstalledExamples, TheCorrectPluginPassesEverything) {
  const auto run = conform_example("example_regression_metrics");
  EXPECT_EQ(run.rc, 0) << run.output;
  ASSERT_TRUE(run.report.is_object()) << run.output;
  EXPECT_EQ(run.report.at("summary").at("total"), 17);
  EXPECT_EQ(run.report.at("summary").at("pass"), 17) << run.output;
  const auto* state = variant(run.report, "mean_absolute_error_state:gloo-ws2-uneven-cpu");
  ASSERT_TRUE(state) << run.output;
  for (const auto& p : state->at("properties"))
    EXPECT_EQ(p.at("outcome"), "pass") << p.at("name") << ": " << p.dump();  // none skipped: it saves and merges
}

TEST(InstalledExamples, NoSyncFailsEqualToSingleAndRanksAgree) {
  const auto run = conform_example("example_no_sync");
  EXPECT_EQ(run.rc, 1) << run.output;
  ASSERT_TRUE(run.report.is_object()) << run.output;
  EXPECT_EQ(run.report.at("summary").at("total"), 9);
  for (const auto& r : rows(run.report)) {
    if (r.world_size == 1) {
      EXPECT_EQ(r.outcome, "pass") << r.id;  // nothing to sync on one rank
    } else if (r.shard == "empty_rank") {
      // Its empty rank raises "no samples" from its local count while the others return.
      EXPECT_EQ(r.outcome, "error") << r.id;
      EXPECT_NE(r.reason.find("raised NotComputableError"), std::string::npos) << r.reason;
    } else {
      EXPECT_EQ(r.outcome, "fail") << r.id;
      for (const char* p : {"equal_to_single", "ranks_agree", "update_after_compute", "agrees_with_reference"})
        EXPECT_TRUE(r.failed.count(p)) << r.id << " " << p;
    }
  }
}

TEST(InstalledExamples, OverwritingSyncFailsUpdateAfterCompute) {
  const auto run = conform_example("example_overwrite_state");
  EXPECT_EQ(run.rc, 1) << run.output;
  ASSERT_TRUE(run.report.is_object()) << run.output;
  EXPECT_EQ(run.report.at("summary").at("total"), 9);
  for (const auto& r : rows(run.report)) {
    if (r.world_size == 1) {
      EXPECT_EQ(r.outcome, "pass") << r.id;
      continue;
    }
    EXPECT_EQ(r.outcome, "fail") << r.id;
    EXPECT_TRUE(r.failed.count("update_after_compute")) << r.id;
    EXPECT_FALSE(r.failed.count("equal_to_single")) << r.id;  // the first compute is right
    EXPECT_FALSE(r.failed.count("ranks_agree")) << r.id;      // and every rank agrees on the wrong value
  }
}

TEST(InstalledExamples, SumForMaxFailsEqualToSingle) {
  const auto run = conform_example("example_sum_for_max");
  EXPECT_EQ(run.rc, 1) << run.output;
  ASSERT_TRUE(run.report.is_object()) << run.output;
  EXPECT_EQ(run.report.at("summary").at("total"), 8);  // MaximumAbsoluteError only
  for (const auto& r : rows(run.report)) {
    if (r.world_size == 1) {
      EXPECT_EQ(r.outcome, "pass") << r.id;
      continue;
    }
    EXPECT_EQ(r.outcome, "fail") << r.id;
    EXPECT_TRUE(r.failed.count("equal_to_single")) << r.id;
    EXPECT_TRUE(r.failed.count("agrees_with_reference")) << r.id;
    EXPECT_FALSE(r.failed.count("ranks_agree")) << r.id;  // every rank gets the same wrong sum
  }
}

TEST(InstalledExamples, RaisingAloneIsAHangBlamedOnTheEmptyRank) {
  const auto run = conform_example("example_raises_alone");
  EXPECT_EQ(run.rc, 3) << run.output;
  ASSERT_TRUE(run.report.is_object()) << run.output;
  EXPECT_EQ(run.report.at("summary").at("total"), 9);
  EXPECT_EQ(run.report.at("summary").at("hang"), 2);
  for (const auto& r : rows(run.report)) {
    if (r.shard != "empty_rank") {
      EXPECT_EQ(r.outcome, "pass") << r.id;
      continue;
    }
    ASSERT_EQ(r.outcome, "hang") << r.id;
    const std::string blamed = "rank " + std::to_string(r.world_size - 1);  // empty_rank empties the last rank
    EXPECT_EQ(r.reason.rfind(blamed + " to blame: " + blamed + " raised NotComputableError at compute", 0), 0u) << r.reason;
    const auto* v = variant(run.report, r.id);
    EXPECT_NE(v->at("diagnosis").get<std::string>().find("A rank must never raise alone"), std::string::npos);
    EXPECT_EQ(v->at("reproduce").get<std::string>().rfind("distmetrics conform --plugin ", 0), 0u);
  }
}

TEST(InstalledExamples, AStateLeftOutOfTheSavedStateFailsStateRoundtripAndMergeState) {
  const auto run = conform_example("example_state_not_saved");
  EXPECT_EQ(run.rc, 1) << run.output;
  ASSERT_TRUE(run.report.is_object()) << run.output;
  EXPECT_EQ(run.report.at("summary").at("total"), 9);
  for (const auto& r : rows(run.report)) {
    if (r.id != "mean_absolute_error_state:gloo-ws2-uneven-cpu") {
      EXPECT_EQ(r.outcome, "pass") << r.id;  // its compute and sync are right
      continue;
    }
    EXPECT_EQ(r.outcome, "fail") << r.id;
    EXPECT_EQ(r.failed, (std::set<std::string>{"state_roundtrip", "merge_state"})) << r.id;
  }
}

}  // namespace
