// `distmetrics conform` on plugins built in this tree: the correct example passes every property;
// a plugin that throws, crashes, hangs and returns the wrong kind of value is reported on each
// variant and the run goes on; the reports (JSON, JUnit, Markdown) and the reproduce command;
// every refusal is a clear error with exit code 2. Also the scenario adaptation and the
// single-process reference's JSON form, in this process.
#include <gtest/gtest.h>
#include <torch/version.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "conform_support.h"
#include "distmetrics/build_config.h"
#include "distmetrics/harness/scenario.h"
#include "distmetrics/plugin/catalog.h"
#include "distmetrics/plugin/conform.h"

namespace {

using conform_test::failed_properties;
using conform_test::outcome;
using conform_test::quote;
using conform_test::run_command;
using conform_test::variant;

conform_test::Run conform(const std::string& args, const std::string& json_name = "") {
  return run_command(DISTMETRICS_BIN, "conform " + args, json_name);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Conform, TheCorrectExamplePassesEveryPropertyWithReports) {
  const std::string markdown = conform_test::temp_file("report.md");
  const std::string junit = conform_test::temp_file("report.xml");
  const std::string html = conform_test::temp_file("report.html");
  const auto run = conform("--plugin " + quote(PLUGIN_EXAMPLE_REGRESSION_METRICS) + " " + quote(EXAMPLE_SCENARIOS) +
                               " --world-sizes 1,2 --markdown " + quote(markdown) + " --junit " + quote(junit) +
                               " --html " + quote(html),
                           "correct.json");
  EXPECT_EQ(run.rc, 0) << run.output;
  ASSERT_TRUE(run.report.is_object()) << run.output;
  const auto& summary = run.report.at("summary");
  // 2 scenarios x (ws1: even, uneven; ws2: even, uneven, empty_rank), and the state scenario's one variant
  EXPECT_EQ(summary.at("total"), 11);
  EXPECT_EQ(summary.at("pass"), 11) << run.output;
  EXPECT_EQ(run.report.at("plugin").at("name"), "example_regression_metrics");
  EXPECT_EQ(run.report.at("plugin").at("torch_version"), TORCH_VERSION);
  // Every property of docs/design.md the default script judges, and agreement with the reference.
  const std::vector<std::string> properties = run.report.at("properties");
  for (const char* p : {"no_hang", "equal_to_single", "ranks_agree", "idempotent", "update_after_compute",
                        "reset_replay", "batch_invariant", "agrees_with_reference", "state_roundtrip", "merge_state"})
    EXPECT_NE(std::find(properties.begin(), properties.end(), p), properties.end()) << p;
  ASSERT_EQ(run.report.at("matrix").size(), 11u);
  for (const auto& row : run.report.at("matrix")) {
    EXPECT_EQ(row.at("outcome"), "pass");
    // The state scenario lists its properties; the others judge every default one (and no state one).
    const bool state = row.at("scenario") == "mean_absolute_error_state";
    for (const auto& p : properties) {
      // accepts_empty_batch: judged whenever the script has 'update empty' (the default does).
      const bool listed = state ? (p == "no_hang" || p == "equal_to_single" || p == "ranks_agree" ||
                                   p == "update_after_compute" || p == "agrees_with_reference" ||
                                   p == "state_roundtrip" || p == "merge_state" || p == "accepts_empty_batch")
                                : (p != "state_roundtrip" && p != "merge_state");
      if (listed) {
        EXPECT_EQ(row.at("properties").at(p), "pass") << row.at("variant") << " " << p;
      } else {
        EXPECT_TRUE(row.at("properties").at(p).is_null()) << row.at("variant") << " " << p;
      }
    }
  }
  const auto* mae = variant(run.report, "mean_absolute_error:gloo-ws2-empty_rank-cpu");
  ASSERT_TRUE(mae);
  EXPECT_EQ(mae->at("metric"), "MeanAbsoluteError");
  // The console: a matrix metric x property, and the last line.
  EXPECT_TRUE(std::regex_search(run.output, std::regex("\nMeanAbsoluteError +(\\. +){11}6/6 passed\n"))) << run.output;
  EXPECT_NE(run.output.find("distmetrics conform: example_regression_metrics: 11 passed, 0 failed, 0 hang, 0 crash, "
                            "0 error, 0 skipped in "),
            std::string::npos)
      << run.output;
  const std::string md = read_file(markdown);
  EXPECT_NE(md.find("## distmetrics conform: example_regression_metrics 1.0.0\n\n**✅ PASSED: all 11 variants passed**"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| `MeanAbsoluteError` | ✅ 6/6 pass | ✅ 6/6 pass |"), std::string::npos) << md;
  EXPECT_EQ(md.find("Not passed"), std::string::npos) << md;
  // The HTML's header: the plugin and what it was compared with.
  const std::string page = read_file(html);
  EXPECT_NE(page.find("<dt>plugin</dt><dd>" + std::string(PLUGIN_EXAMPLE_REGRESSION_METRICS) + "</dd>"), std::string::npos);
  EXPECT_NE(page.find("<dt>compared with</dt><dd>the distmetrics "), std::string::npos);
  EXPECT_NE(page.find("<dt>plugin LibTorch</dt><dd>" TORCH_VERSION "</dd>"), std::string::npos);
  std::filesystem::remove(html);
  const std::string xml = read_file(junit);
  EXPECT_NE(xml.find("<testsuite name=\"mean_absolute_error\" tests=\"5\" failures=\"0\""), std::string::npos) << xml;
  std::filesystem::remove(markdown);
  std::filesystem::remove(junit);
}

// An input dtype's variant: the plugin's single-process run (on the helper worker) gets the values
// the ranks were fed, rounded through that dtype, as `run`'s reference does. Inputs near 1e6 in
// bfloat16 lose everything below 4096, so a reference on the unrounded values (MAE 0.44 here)
// would fail the correct plugin on equal_to_single at every world size.
TEST(Conform, AnInputDtypesSingleProcessRunGetsTheRoundedValuesTheRanksWereFed) {
  const std::string folder = conform_test::temp_file("dtype_scenario");
  std::filesystem::create_directories(folder);
  const std::string scenario = folder + "/mae_bfloat16_offset.toml";
  {
    std::ofstream out(scenario);
    out << "description = \"MeanAbsoluteError on bfloat16 inputs near 1e6\"\n"
           "[metric]\nname = \"MeanAbsoluteError\"\n"
           "[data]\ngenerator = \"regression\"\nparams = { offset = 1e6, noise = 0.5 }\nseed = 7\n"
           "num_samples = 40\nbatch_size = 4\n"
           "[variants]\nbackends = [\"gloo\"]\nworld_sizes = [1, 2]\nshards = [\"even\"]\ndtypes = [\"bfloat16\"]\n";
  }
  const auto run = conform("--plugin " + quote(PLUGIN_EXAMPLE_REGRESSION_METRICS) + " " + quote(scenario), "dtype.json");
  std::filesystem::remove_all(folder);
  EXPECT_EQ(run.rc, 0) << run.output;
  ASSERT_TRUE(run.report.is_object()) << run.output;
  EXPECT_EQ(run.report.at("summary").at("total"), 2) << run.output;
  EXPECT_EQ(run.report.at("summary").at("pass"), 2) << run.output;
  for (const char* id : {"mae_bfloat16_offset:gloo-ws1-even-cpu-bfloat16", "mae_bfloat16_offset:gloo-ws2-even-cpu-bfloat16"}) {
    EXPECT_EQ(outcome(run.report, id), "pass") << id << "\n" << run.output;
  }
}

// A correct metric (the reference Accuracy itself, as a plugin's) on a scenario whose padded
// shards are expected to differ from the single process: conform honours [expect] fail as run
// does, and agrees_with_reference compares like with like (the reference on the same padded
// shards), so nothing fails.
TEST(Conform, ExpectedFailuresMeanTheSameInRunAndConform) {
  const auto run = conform("--plugin " + quote(PLUGIN_VERDICT_TEST_PLUGIN) + " --metric Accuracy " +
                               quote(std::string(LIBRARY_SCENARIOS) + "/regression/pytorch_25162_padded_sampler.toml") +
                               " --world-sizes 2,3 --backend gloo",
                           "padded.json");
  EXPECT_EQ(run.rc, 0) << run.output;
  ASSERT_TRUE(run.report.is_object()) << run.output;
  ASSERT_EQ(run.report.at("variants").size(), 2u) << run.output;  // world sizes 2 and 3, padded
  for (const auto& entry : run.report.at("variants")) {
    const auto* v = &entry;
    const std::string id = v->at("id");
    EXPECT_EQ(v->at("outcome"), "pass") << id;
    for (const auto& p : v->at("properties")) {
      if (p.at("name") == "equal_to_single") {
        EXPECT_TRUE(p.at("expected_failure").get<bool>()) << id;
      }
      if (p.at("name") == "agrees_with_reference") {
        EXPECT_EQ(p.at("outcome"), "pass") << p.at("message");
      }
    }
  }
}

// A rank raises alone while its peer waits in an allreduce the metric issued itself on the Gloo
// process group: the peer's timeout follows the raise in time, so the raising rank is to blame
// and the variant is a hang, whatever API the waiting rank used.
TEST(Conform, ARankThatRaisesBeforeAPeersRawC10dWaitTimesOutIsBlamed) {
  const auto run = conform("--plugin " + quote(PLUGIN_VERDICT_TEST_PLUGIN) + " --metric MeanAbsoluteError " +
                               quote(VERDICT_SCENARIOS),
                           "raw_c10d.json");
  EXPECT_EQ(run.rc, 3) << run.output;
  ASSERT_TRUE(run.report.is_object()) << run.output;
  const auto* v = variant(run.report, "mae_raises_alone_raw_c10d:gloo-ws2-even-cpu");
  ASSERT_TRUE(v) << run.output;
  EXPECT_EQ(v->at("outcome"), "hang") << run.output;
  const std::string reason = v->at("reason");
  EXPECT_EQ(reason.rfind("rank 1 to blame: rank 1 raised NotComputableError at compute (script step 2)", 0), 0u) << reason;
  EXPECT_NE(reason.find("rank 0 waited for it until its wait timed out"), std::string::npos) << reason;
  const std::string diagnosis = v->at("diagnosis");
  EXPECT_NE(diagnosis.find("in the order they happened:\n  +0 s  rank 1 raised NotComputableError"), std::string::npos)
      << diagnosis;
  EXPECT_NE(diagnosis.find("shards: rank 0 10 samples in 3 batches; rank 1 10 samples in 3 batches"), std::string::npos)
      << diagnosis;
  for (const auto& p : v->at("properties")) {
    if (p.at("name") != "no_hang") continue;
    EXPECT_EQ(p.at("message").get<std::string>().rfind("no_hang failed: rank 1 left the collective rank 0 waits in (detected after ", 0),
              0u)
        << p.at("message");
  }
}

// As a new user tries a plugin: world size 2 alone, where rank 1 issues a barrier in its first
// compute that rank 0 never issues. One rank on each side, no other compute or variant: the plugin's
// single-process run (built on the helper worker) issues the metric's own sequence there and blames
// rank 1, on gloo and on mpi, naming itself as the baseline.
TEST(Conform, AnEvenSplitIsBlamedOnTheRankThePluginsSingleProcessRunDisagreesWith) {
  const auto run = conform("--plugin " + quote(PLUGIN_VERDICT_TEST_PLUGIN) + " --metric MeanSquaredError " +
                               quote(VERDICT_SCENARIOS),
                           "even_split.json");
  EXPECT_EQ(run.rc, 3) << run.output;
  ASSERT_TRUE(run.report.is_object()) << run.output;
  for (const std::string backend : {"gloo", "mpi"}) {
    const auto* v = variant(run.report, "mse_extra_barrier_on_rank1:" + backend + "-ws2-even-cpu");
    ASSERT_TRUE(v) << run.output;
    EXPECT_EQ(v->at("outcome"), "hang") << backend;
    const std::string reason = v->at("reason");
    EXPECT_EQ(reason.rfind("rank 1 to blame: rank 1 deviated from the metric's sequence in compute 1 (script step 2): in the "
                           "single-process run (the same metric in one process, on all the data), compute 1 (script step 2) "
                           "issued all_reduce(sum) (float64 [2]), as rank 0 did here; rank 1 issued barrier #1 there, which "
                           "rank 0 never issued (the ranks split evenly: the single-process run is the baseline).",
                           0),
              0u)
        << backend << ": " << reason;
    EXPECT_EQ(v->at("deviation").at("blamed"), nlohmann::json::array({1})) << backend;
    EXPECT_EQ(v->at("diagnosis").get<std::string>().find("neither side is blamed"), std::string::npos) << backend;
  }
}

TEST(Conform, AMisbehavingPluginIsReportedOnEachVariantAndTheRunGoesOn) {
  const std::string markdown = conform_test::temp_file("misbehaving.md");
  const auto run = conform("--plugin " + quote(PLUGIN_MISBEHAVING_TEST_PLUGIN) + " " + quote(MISBEHAVING_SCENARIOS) +
                               " --markdown " + quote(markdown),
                           "misbehaving.json");
  EXPECT_EQ(run.rc, 4) << run.output;  // a crash outranks hangs and failures
  ASSERT_TRUE(run.report.is_object()) << run.output;
  EXPECT_EQ(run.report.at("summary").at("total"), 10) << run.output;  // every variant ran and was judged
  const auto& r = run.report;

  // Throws in update() on rank 1: rank 0 is left alone in the compute's all_reduce.
  EXPECT_EQ(outcome(r, "mae_throws_in_update:gloo-ws1-even-cpu"), "pass");
  ASSERT_EQ(outcome(r, "mae_throws_in_update:gloo-ws2-even-cpu"), "hang");
  EXPECT_EQ(variant(r, "mae_throws_in_update:gloo-ws2-even-cpu")->at("reason").get<std::string>().rfind(
                "rank 1 to blame: rank 1 raised std::runtime_error at update", 0),
            0u);

  // Crashes without a communicator: only its single-process run does, on the helper process.
  for (const char* id : {"mse_needs_communicator:gloo-ws1-even-cpu", "mse_needs_communicator:gloo-ws2-even-cpu"}) {
    ASSERT_EQ(outcome(r, id), "error") << id;
    EXPECT_NE(variant(r, id)->at("reason").get<std::string>().find(
                  "single-process run (no communicator; on a helper process), crashed (killed by signal 11 (SIGSEGV))"),
              std::string::npos)
        << variant(r, id)->at("reason");
  }

  // Segfaults on rank 1 in compute().
  EXPECT_EQ(outcome(r, "rmse_segfaults_on_rank1:gloo-ws1-even-cpu"), "pass");
  ASSERT_EQ(outcome(r, "rmse_segfaults_on_rank1:gloo-ws2-even-cpu"), "crash");
  // The crash names the script step and the method it died in, and the crashing rank's
  // backtrace (from its own SIGSEGV handler, symbols demangled by the supervisor).
  const auto* segfault = variant(r, "rmse_segfaults_on_rank1:gloo-ws2-even-cpu");
  EXPECT_EQ(segfault->at("reason").get<std::string>().rfind(
                "rank 1 to blame: rank 1 crashed (killed by signal 11 (SIGSEGV) in script step 2 ('compute'): compute() 1)",
                0),
            0u)
      << segfault->at("reason");
  const std::string crash_diagnosis = segfault->at("diagnosis").get<std::string>();
  EXPECT_NE(crash_diagnosis.find("| distmetrics: rank 1 killed by signal 11 (SIGSEGV) in script step 2"), std::string::npos)
      << crash_diagnosis;
  EXPECT_NE(crash_diagnosis.find("distmetrics::harness::run_scenario_variant_task"),
            std::string::npos)
      << crash_diagnosis;
  EXPECT_NE(crash_diagnosis.find("shards: rank 0 "), std::string::npos) << crash_diagnosis;
  ASSERT_EQ(segfault->at("shards").size(), 2u);
  EXPECT_EQ(segfault->at("shards")[1].at("rank"), 1);
  EXPECT_GT(segfault->at("shards")[1].at("samples").get<int>(), 0);

  // Returns a tensor where the reference returns a number: consistent with itself, so only
  // agrees_with_reference fails, saying why.
  for (const char* id : {"maxae_wrong_type:gloo-ws1-even-cpu", "maxae_wrong_type:gloo-ws2-even-cpu"}) {
    ASSERT_EQ(outcome(r, id), "fail") << id;
    EXPECT_EQ(failed_properties(*variant(r, id)), std::set<std::string>{"agrees_with_reference"}) << id;
    for (const auto& p : variant(r, id)->at("properties")) {
      if (p.at("name") != "agrees_with_reference") continue;
      EXPECT_NE(p.at("message").get<std::string>().find("a different kind of value: tensor"), std::string::npos)
          << p.at("message");
    }
  }

  // Never returns from compute() on rank 0.
  EXPECT_EQ(outcome(r, "r2_hangs_on_rank0:gloo-ws1-even-cpu"), "hang");
  ASSERT_EQ(outcome(r, "r2_hangs_on_rank0:gloo-ws2-even-cpu"), "hang");
  EXPECT_EQ(variant(r, "r2_hangs_on_rank0:gloo-ws2-even-cpu")->at("reason").get<std::string>().rfind("rank 0 to blame", 0),
            0u);

  // The matrix gives a variant that did not finish its outcome in every column.
  for (const auto& row : r.at("matrix")) {
    if (row.at("variant") != "rmse_segfaults_on_rank1:gloo-ws2-even-cpu") continue;
    for (const auto& [property, cell] : row.at("properties").items()) EXPECT_EQ(cell, "crash") << property;
  }
  // Under the matrix, each failure with its reproduce command; the Markdown report likewise.
  EXPECT_TRUE(std::regex_search(run.output,
                                 std::regex("\nCRASH  rmse_segfaults_on_rank1:gloo-ws2-even-cpu  \\([0-9.]+ s\\)  "
                                            "\\[RootMeanSquaredError\\]\n")))
      << run.output;
  const std::string md = read_file(markdown);
  EXPECT_NE(md.find("<details><summary>💥 <b>CRASH</b> <code>rmse_segfaults_on_rank1:gloo-ws2-even-cpu</code> "
                    "(RootMeanSquaredError): rank 1 to blame"),
            std::string::npos)
      << md;
  // Only agrees_with_reference fails for the metric that returns a tensor (accepts_empty_batch
  // comes after it).
  EXPECT_TRUE(std::regex_search(md, std::regex("\n\\| `MaximumAbsoluteError` \\|( ✅ 2/2 pass \\|)+ ❌ 2/2 fail \\| ✅ 2/2 pass \\|\n")))
      << md;
  std::filesystem::remove(markdown);
}

TEST(Conform, TheReproduceCommandRunsExactlyThatVariantAgain) {
  const auto first = conform("--plugin " + quote(PLUGIN_MISBEHAVING_TEST_PLUGIN) + " --metric RootMeanSquaredError " +
                                 quote(MISBEHAVING_SCENARIOS),
                             "reproduce_first.json");
  const auto* crashed = variant(first.report, "rmse_segfaults_on_rank1:gloo-ws2-even-cpu");
  ASSERT_TRUE(crashed) << first.output;
  std::string command = crashed->at("reproduce").get<std::string>();
  ASSERT_EQ(command.rfind("distmetrics conform --plugin ", 0), 0u) << command;
  EXPECT_NE(command.find("--metric RootMeanSquaredError"), std::string::npos) << command;
  const auto again = run_command(DISTMETRICS_BIN, command.substr(std::string("distmetrics ").size()), "reproduce_again.json");
  EXPECT_EQ(again.rc, 4) << again.output;
  ASSERT_TRUE(again.report.is_object()) << again.output;
  ASSERT_EQ(again.report.at("variants").size(), 1u);
  EXPECT_EQ(outcome(again.report, "rmse_segfaults_on_rank1:gloo-ws2-even-cpu"), "crash");
}

struct Refusal {
  const char* name;
  std::string plugin;
  const char* message;
};

TEST(Conform, RefusesWhatItCannotLoadWithExitCode2) {
  const std::string text_file = conform_test::temp_file("libtext.so");
  std::ofstream(text_file) << "not a library\n";
  const std::vector<Refusal> refusals = {
      {"missing file", "/nonexistent/libplugin.so", "plugin /nonexistent/libplugin.so: no such file"},
      {"not a shared library", text_file, "is not a shared library (it does not start with the ELF magic number)"},
      {"not a plugin", PLUGIN_NOT_A_PLUGIN, "is a shared library but not a distmetrics plugin"},
      {"missing entry point", PLUGIN_HANDMADE_NO_ENTRY, "exports no `distmetrics_plugin_entry` function"},
      {"wrong interface", PLUGIN_HANDMADE_WRONG_INTERFACE, "expected interface 2, found 99"},
      {"wrong LibTorch", PLUGIN_HANDMADE_WRONG_TORCH, "expected LibTorch " TORCH_VERSION ", found 0.0.1"},
      {"wrong C++ ABI", PLUGIN_HANDMADE_WRONG_CXX11_ABI, "found 7"},
      {"failed registration", PLUGIN_HANDMADE_REGISTRATION_FAILS, "the handmade plugin refuses to register anything"},
  };
  for (const auto& r : refusals) {
    const auto run = conform("--plugin " + quote(r.plugin) + " " + quote(EXAMPLE_SCENARIOS));
    EXPECT_EQ(run.rc, 2) << r.name << ": " << run.output;
    EXPECT_NE(run.output.find("distmetrics conform: plugin "), std::string::npos) << r.name << ": " << run.output;
    EXPECT_NE(run.output.find(r.message), std::string::npos) << r.name << ": " << run.output;
  }
  std::filesystem::remove(text_file);
}

// --rank-memory reaches conform's rank pools: a limit too small for Gloo's own threads is the
// outcome memory_exceeded on every variant, blamed on rank 0, and the reproduce line keeps it.
TEST(Conform, RankMemoryBoundsTheRanksOfItsPools) {
  if (DISTMETRICS_TORCH_HAS_CUDA) {
    // libtorch_cuda alone maps more than 300 MiB of address space before main (the same skip as
    // RankPool.AMemoryLimitTooSmallForTheCommunicatorIsNamedOnEveryRank).
    GTEST_SKIP() << "a CUDA LibTorch maps more than the 300 MiB limit of this test before main";
  }
  const auto run = conform("--plugin " + quote(PLUGIN_EXAMPLE_REGRESSION_METRICS) + " " +
                               quote(std::string(EXAMPLE_SCENARIOS) + "/mean_absolute_error.toml") +
                               " --world-sizes 2 --shard even --rank-memory 0.3",
                           "memory.json");
  EXPECT_EQ(run.rc, 6) << run.output;
  ASSERT_TRUE(run.report.is_object()) << run.output;
  EXPECT_EQ(run.report.at("summary").at("memory_exceeded"), 1) << run.output;
  const auto* v = variant(run.report, "mean_absolute_error:gloo-ws2-even-cpu");
  ASSERT_TRUE(v) << run.output;
  EXPECT_EQ(v->at("outcome"), "memory_exceeded");
  const std::string reason = v->at("reason");
  EXPECT_EQ(reason.rfind("rank 0 to blame: rank 0 could not build the gloo communicator within its memory limit of 0.3 GiB", 0), 0u)
      << reason;
  const std::string reproduce = v->at("reproduce");
  EXPECT_NE(reproduce.find(" --rank-memory 0.3"), std::string::npos) << reproduce;
  const auto refused = conform("--plugin " + quote(PLUGIN_EXAMPLE_REGRESSION_METRICS) + " --rank-memory -1 " + quote(EXAMPLE_SCENARIOS));
  EXPECT_EQ(refused.rc, 2) << refused.output;
  EXPECT_NE(refused.output.find("--rank-memory"), std::string::npos) << refused.output;
}

TEST(Conform, RefusesBadRequestsWithExitCode2) {
  const std::string plugin = quote(PLUGIN_EXAMPLE_REGRESSION_METRICS);
  auto run = conform("--plugin " + plugin + " --metric MeanAbsolutError " + quote(EXAMPLE_SCENARIOS));
  EXPECT_EQ(run.rc, 2);
  EXPECT_NE(run.output.find("plugin example_regression_metrics has no metric 'MeanAbsolutError'; did you mean "
                            "'MeanAbsoluteError'?"),
            std::string::npos)
      << run.output;
  run = conform("--plugin " + plugin + " --metric MaximumAbsoluteError " + quote(std::string(EXAMPLE_SCENARIOS) + "/mean_absolute_error.toml"));
  EXPECT_EQ(run.rc, 2);
  EXPECT_NE(run.output.find("uses 'MaximumAbsoluteError' (the metric(s) of plugin example_regression_metrics to check)"),
            std::string::npos)
      << run.output;
  run = conform(quote(EXAMPLE_SCENARIOS));
  EXPECT_EQ(run.rc, 2);
  EXPECT_NE(run.output.find("give one of --plugin PATH (the shared library of a plugin) or --python SOURCE"),
            std::string::npos) << run.output;
  run = conform("--plugin " + plugin + " --shard evne " + quote(EXAMPLE_SCENARIOS));
  EXPECT_EQ(run.rc, 2);
  EXPECT_NE(run.output.find("--shard: unknown value 'evne'; did you mean 'even'?"), std::string::npos) << run.output;
  // The command is part of the CLI's help.
  run = run_command(DISTMETRICS_BIN, "--help");
  EXPECT_EQ(run.rc, 0);
  EXPECT_NE(run.output.find("conform"), std::string::npos) << run.output;
}

// --- In this process ---------------------------------------------------------------------------

distmetrics::harness::Scenario scenario_from(const std::string& metric_table) {
  const std::string text = "description = \"inline\"\n" + metric_table +
                           "\n[data]\ngenerator = \"regression\"\nseed = 1\nnum_samples = 8\nbatch_size = 2\n"
                           "[variants]\nworld_sizes = [2]\nbackends = [\"gloo\"]\n";
  auto loaded = distmetrics::harness::load_scenario_text(text, "inline.toml", "inline");
  if (!loaded.scenario) {
    for (const auto& d : loaded.diagnostics) ADD_FAILURE() << d.to_string();
    return {};
  }
  return *loaded.scenario;
}

TEST(ConformParts, ScenarioParametersAreThoseThePluginTakes) {
  const auto& plugin = distmetrics::plugin::load_plugin(PLUGIN_EXAMPLE_REGRESSION_METRICS);
  // The reference's default for a parameter the plugin does not declare: left out.
  auto adapted = distmetrics::plugin::adapt_scenario(scenario_from("[metric]\nname = \"MeanAbsoluteError\"\n"), plugin);
  EXPECT_FALSE(adapted.cannot_run) << adapted.cannot_run->text;
  EXPECT_EQ(adapted.scenario.metric, "MeanAbsoluteError@" + plugin.path);
  EXPECT_EQ(adapted.scenario.metric_params, nlohmann::json::object());
  EXPECT_EQ(adapted.reference.metric, "MeanAbsoluteError");
  EXPECT_EQ(adapted.reference.metric_params.at("sum_dtype"), "float64");
  // A value the plugin cannot be given: every variant of the scenario is a skip, saying why.
  adapted = distmetrics::plugin::adapt_scenario(
      scenario_from("[metric]\nname = \"MeanAbsoluteError\"\nparams = { sum_dtype = \"float32\" }\n"), plugin);
  ASSERT_TRUE(adapted.cannot_run);
  EXPECT_EQ(adapted.cannot_run->text,
            "plugin example_regression_metrics's MeanAbsoluteError takes no parameter 'sum_dtype', which this scenario "
            "sets to \"float32\"");
  // Skips of other values are one group in the views.
  EXPECT_EQ(adapted.cannot_run->gist, "plugin example_regression_metrics's MeanAbsoluteError takes no parameter 'sum_dtype'");
}

TEST(ConformParts, TheSingleProcessReferenceTravelsAsJson) {
  distmetrics::harness::SingleProcessReference ref;
  ref.at_compute.resize(2);
  ref.at_compute[0].value = 0.25;
  ref.at_compute[1].error_type = "NotComputableError";
  ref.at_compute[1].error = "no samples";
  ref.full.value = nlohmann::json{{"count", 3}, {"mean", 0.5}};
  ref.other_batch_sizes.push_back({5, ref.at_compute[0]});
  ref.failure = "";
  const auto back = distmetrics::plugin::reference_from_json(distmetrics::plugin::reference_to_json(ref));
  ASSERT_EQ(back.at_compute.size(), 2u);
  EXPECT_EQ(*back.at_compute[0].value, 0.25);
  EXPECT_EQ(back.at_compute[1].error_type, "NotComputableError");
  EXPECT_EQ(back.at_compute[1].error, "no samples");
  EXPECT_EQ(*back.full.value, ref.full.value);
  ASSERT_EQ(back.other_batch_sizes.size(), 1u);
  EXPECT_EQ(back.other_batch_sizes[0].first, 5);
  EXPECT_EQ(*back.other_batch_sizes[0].second.value, 0.25);
  EXPECT_EQ(back.failure, "");
}

}  // namespace
