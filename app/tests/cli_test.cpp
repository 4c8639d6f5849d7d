// The CLI, in this process (so that its rank pool's workers are this binary and know the broken
// metrics of the engine tests): reports and exit codes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "distmetrics/app/cli.h"
#include "distmetrics/harness/outcome.h"
#include "distmetrics/harness/tables.h"
#include "distmetrics/runtime/rank_pool.h"
#include "engine_broken_metrics.h"

namespace dh = distmetrics::harness;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(DISTMETRICS_TEST_SCENARIOS) + "/broken";

int cli(std::vector<std::string> args, std::string& out, std::string& err) {
  dh::testing::register_broken_metrics();
  args.insert(args.begin(), "distmetrics");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::ostringstream o, e;
  const int code = distmetrics::app::cli_main(static_cast<int>(argv.size()), argv.data(), o, e);
  out = o.str();
  err = e.str();
  return code;
}

}  // namespace

TEST(Cli, ExitCodesAndReports) {
  const fs::path tmp = fs::temp_directory_path() / ("dm_engine_cli_" + std::to_string(::getpid()));
  std::string out, err;
  // Passing variants: 0, with the JSON and JUnit reports written.
  EXPECT_EQ(cli({"run", kDir + "/correct_mean.toml", "--world-sizes", "2", "--shard", "even", "--verbose", "--json",
                 (tmp / "r.json").string(), "--junit", (tmp / "r.xml").string()},
                out, err),
            0)
      << out << err;
  EXPECT_NE(out.find("PASS  broken/correct_mean:gloo-ws2-even-cpu"), std::string::npos) << out;
  EXPECT_NE(out.find("distmetrics: 2 passed, 0 failed, 0 hang, 0 crash, 0 error, 0 skipped in "), std::string::npos) << out;
  std::ifstream json_file(tmp / "r.json");
  const auto report = nlohmann::json::parse(json_file);
  EXPECT_EQ(report["summary"]["pass"], 2);
  EXPECT_EQ(report["variants"][1]["id"], "broken/correct_mean:mpi-ws2-even-cpu");
  std::ifstream xml_file(tmp / "r.xml");
  std::stringstream xml;
  xml << xml_file.rdbuf();
  EXPECT_NE(xml.str().find("<testcase classname=\"broken/correct_mean\" name=\"gloo-ws2-even-cpu\""), std::string::npos);

  // A failed property: 1. A hang: 3. Both: 3. A crash: 4.
  EXPECT_EQ(cli({"run", kDir + "/no_sync.toml", "--quiet"}, out, err), 1) << out << err;
  EXPECT_EQ(out.find("PASS"), std::string::npos) << out;  // quiet
  EXPECT_EQ(cli({"run", kDir + "/raise_alone.toml"}, out, err), 3) << out << err;
  EXPECT_NE(out.find("HANG  broken/raise_alone:gloo-ws3-empty_rank-cpu"), std::string::npos) << out;
  EXPECT_EQ(cli({"run", kDir + "/no_sync.toml", kDir + "/abort.toml", kDir + "/raise_alone.toml", "--quiet"}, out, err), 4)
      << out << err;
  // Bad input: 2, and nothing runs.
  EXPECT_EQ(cli({"run", kDir + "/no_sync.toml", "--shard", "evne"}, out, err), 2);
  EXPECT_NE(err.find("--shard: unknown value 'evne'; did you mean 'even'?"), std::string::npos) << err;
  EXPECT_EQ(cli({"run", std::string(DISTMETRICS_TEST_SCENARIOS) + "/bad/types.toml"}, out, err), 2);
  EXPECT_NE(err.find("nothing was run"), std::string::npos) << err;
  EXPECT_EQ(cli({"run", "--no-such-flag"}, out, err), 2);
  EXPECT_EQ(cli({"run", kDir + "/no_sync.toml", "--filter", "no-such-variant"}, out, err), 2);
  EXPECT_NE(out.find("no variant matched the selection"), std::string::npos) << out;
  EXPECT_EQ(cli({"list", kDir + "/correct_mean.toml", "--backend", "gloo", "--world-sizes", "1,3", "--filter", "*-even-*",
                 "--filter", "*round_robin*"},
                out, err),
            0);
  EXPECT_EQ(out,
            "broken/correct_mean:gloo-ws1-even-cpu\nbroken/correct_mean:gloo-ws1-round_robin-cpu\n"
            "broken/correct_mean:gloo-ws3-even-cpu\nbroken/correct_mean:gloo-ws3-round_robin-cpu\n");
  EXPECT_EQ(cli({"list", kDir + "/correct_mean.toml", "--json", "--world-sizes", "1", "--backend", "mpi"}, out, err), 0);
  const auto listed = nlohmann::json::parse(out);
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[0], nlohmann::json({{"id", "broken/correct_mean:mpi-ws1-even-cpu"},
                                       {"scenario", "broken/correct_mean"},
                                       {"file", kDir + "/correct_mean.toml"},
                                       {"metric", "CorrectMean"},
                                       {"backend", "mpi"},
                                       {"launch", "mpirun"},  // the backend table's pool_launch
                                       {"world_size", 1},
                                       {"shard", "even"},
                                       {"placement", "cpu"},
                                       {"deadline", 30.0},
                                       {"markers", {"mpi"}},
                                       {"skip", nullptr}}));
  EXPECT_EQ(cli({"validate", kDir}, out, err), 0) << out;
  // Every file of the folder, counted here (a file added to broken/ must validate too).
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(kDir)) files += entry.path().extension() == ".toml";
  const std::string n = std::to_string(files);
  EXPECT_NE(out.find("distmetrics: " + n + " scenario file(s): " + n + " valid, 0 with errors (0 error(s))"),
            std::string::npos) << out;
  fs::remove_all(tmp);
}

// A metric that allocates past --rank-memory on rank 1 (on the local pool): the outcome
// memory_exceeded naming rank 1 and its limit, in the progress, the last line, the JSON report and
// JUnit, with its own exit code; the variant after it, on the same pool, passes.
TEST(Cli, ARankPastItsMemoryLimitIsAnOutcomeOfItsOwnNamingTheRank) {
  const fs::path tmp = fs::temp_directory_path() / ("dm_engine_cli_memory_" + std::to_string(::getpid()));
  std::string out, err;
  const int code = cli({"run", kDir + "/memory_exceeded.toml", kDir + "/correct_mean.toml", "--backend", "gloo",
                        "--world-sizes", "2", "--shard", "even", "--rank-memory", "6", "--verbose", "--json",
                        (tmp / "r.json").string(), "--junit", (tmp / "r.xml").string()},
                       out, err);
  EXPECT_EQ(code, 6) << out << err;
  EXPECT_NE(out.find("MEMORY_EXCEEDED broken/memory_exceeded:gloo-ws2-even-cpu"), std::string::npos) << out;
  EXPECT_NE(out.find("PASS  broken/correct_mean:gloo-ws2-even-cpu"), std::string::npos) << out;
  EXPECT_NE(out.find("\ndistmetrics: 1 passed, 0 failed, 0 hang, 0 crash, 1 memory_exceeded, 0 error, 0 skipped in "),
            std::string::npos)
      << out;
  std::ifstream json_file(tmp / "r.json");
  const auto report = nlohmann::json::parse(json_file);
  EXPECT_EQ(report["summary"]["memory_exceeded"], 1);
  EXPECT_EQ(report["summary"]["pass"], 1);
  const nlohmann::json* memory = nullptr;
  for (const auto& v : report["variants"])
    if (v["id"] == "broken/memory_exceeded:gloo-ws2-even-cpu") memory = &v;
  ASSERT_TRUE(memory) << report.dump(2);
  EXPECT_EQ((*memory)["outcome"], "memory_exceeded");
  const std::string reason = (*memory)["reason"];
  EXPECT_EQ(reason.rfind("rank 1 to blame: rank 1 went past its memory limit of 6.0 GiB (an allocation failed; raise "
                         "it with --rank-memory if the metric needs more)",
                         0),
            0u)
      << reason;
  EXPECT_EQ((*memory)["ranks"][1]["state"], "raised");
  const std::string diagnosis = (*memory)["diagnosis"];
  EXPECT_NE(diagnosis.find("The limit is per rank (--rank-memory GIB"), std::string::npos) << diagnosis;
  std::ifstream xml_file(tmp / "r.xml");
  std::stringstream xml;
  xml << xml_file.rdbuf();
  EXPECT_NE(xml.str().find("<error message=\"rank 1 to blame: rank 1 went past its memory limit of 6.0 GiB"), std::string::npos)
      << xml.str();
  EXPECT_NE(xml.str().find("type=\"memory_exceeded\">"), std::string::npos) << xml.str();
  fs::remove_all(tmp);
}

// A world size past what a local pool starts on this machine is valid in a scenario (it may be
// meant for `mpirun -np N` across hosts, which runs only the variants of its own size, and a
// validation must not depend on the machine it runs on); a local run says the limit per variant.
TEST(Cli, AWorldSizePastTheLocalLimitValidatesAndALocalRunNamesTheLimit) {
  const int most = distmetrics::runtime::max_local_world_size();
  const fs::path file = fs::temp_directory_path() / ("dm_big_world_" + std::to_string(::getpid()) + ".toml");
  {
    std::ifstream in(kDir + "/correct_mean.toml");
    std::stringstream text;
    text << in.rdbuf();
    std::string toml = text.str();
    const std::string old_sizes = "world_sizes = [1, 2, 3]";
    ASSERT_NE(toml.find(old_sizes), std::string::npos);
    toml.replace(toml.find(old_sizes), old_sizes.size(), "world_sizes = [2, " + std::to_string(most + 1) + "]");
    std::ofstream(file) << toml;
  }
  std::string out, err;
  if (most + 1 > 64) {  // a machine whose local limit is the scenario's own (64): past it is invalid
    EXPECT_EQ(cli({"validate", file.string()}, out, err), 2) << out << err;
    EXPECT_NE((out + err).find("variants.world_sizes"), std::string::npos) << out << err;
    fs::remove(file);
    return;
  }
  EXPECT_EQ(cli({"validate", file.string()}, out, err), 0) << out << err;
  EXPECT_EQ(cli({"run", file.string(), "--world-sizes", std::to_string(most + 1), "--backend", "gloo", "--shard", "even"},
                out, err),
            1)
      << out << err;
  EXPECT_NE(out.find("ERROR  "), std::string::npos) << out;
  EXPECT_NE(out.find("world size " + std::to_string(most + 1) + " is more ranks than a local pool starts on this machine (at most " +
                     std::to_string(most)),
            std::string::npos)
      << out;
  fs::remove(file);
}

TEST(Cli, SelectionOptionsTakeOneValueSoPathsMayFollow) {
  std::string out, err;
  // "--world-sizes 2 <path>": the path is a path, not a second world size.
  ASSERT_EQ(cli({"list", "--world-sizes", "2", "--backend", "gloo", kDir + "/correct_mean.toml", "--shard", "even", "--json"}, out, err), 0)
      << out << err;
  const auto listed = nlohmann::json::parse(out);
  ASSERT_EQ(listed.size(), 1u) << out;
  EXPECT_EQ(listed[0]["id"], "broken/correct_mean:gloo-ws2-even-cpu");
  // The listing carries the scenario's deadline, for runners that wrap each variant in a timeout,
  // its metric and how a local pool starts its ranks (the backend table's pool_launch).
  EXPECT_GT(listed[0]["deadline"].get<double>(), 0.0);
  EXPECT_EQ(listed[0]["metric"], "CorrectMean");
  EXPECT_EQ(listed[0]["launch"], "direct");
  // Repeating an option adds to it.
  ASSERT_EQ(cli({"list", "--world-sizes", "1", "--world-sizes", "2", kDir + "/correct_mean.toml", "--backend", "gloo", "--shard",
                 "even"},
                out, err),
            0)
      << out << err;
  EXPECT_EQ(out, "broken/correct_mean:gloo-ws1-even-cpu\nbroken/correct_mean:gloo-ws2-even-cpu\n");
}

// One real run with passes, a failure, two hangs and skips, rendered into every view. The HTML is
// checked in a browser by app/tests/report_views_test.py, which runs this test with
// DISTMETRICS_REPORT_DIR set and keeps what it writes there.
TEST(Cli, ARealRunRendersEveryView) {
  const char* dir_env = std::getenv("DISTMETRICS_REPORT_DIR");
  const fs::path dir = dir_env && *dir_env ? fs::path(dir_env)
                                           : fs::temp_directory_path() / ("dm_report_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string out, err;
  const int code = cli({"run", kDir + "/correct_mean.toml", kDir + "/no_sync.toml", kDir + "/raise_alone.toml",
                        kDir + "/gather_per_element.toml", kDir + "/on_gpus.toml", "--filter",
                        "broken/correct_mean:gloo-ws2-*", "--filter", "broken/no_sync:*", "--filter", "broken/raise_alone:*",
                        "--filter", "broken/gather_per_element:*", "--filter", "broken/on_gpus:*", "--json",
                        (dir / "report.json").string(), "--html", (dir / "report.html").string(), "--markdown",
                        (dir / "report.md").string()},
                       out, err);
  EXPECT_EQ(code, 3) << out << err;
  {
    std::ofstream console(dir / "console.txt");
    console << out;
  }
  // The console: the matrix, the folded skips, each failure once, the last line. A variant that
  // hung shows its outcome in every column it checks (its properties were kept or not judged).
  EXPECT_NE(out.find("\nscenario                   no_hang  equal  agree  idem  update  reset  batch  empty\n"
                     "broken/correct_mean           .       .      .     .      .       .      .      .    4/4 passed\n"
                     "broken/gather_per_element     H       H      H     H      H       H      H      H    1/1 hang\n"
                     "broken/no_sync                .       F      F     .      F       F      .      .    1/1 fail\n"
                     "broken/on_gpus                s       -      -     -      -       -      -      -    8 skipped\n"
                     "broken/raise_alone            H       H      H     H      H       H      H      H    1/1 hang\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\n8 skipped: needs a GPU  (--verbose lists them)\n"),  // gloo ranks may share one
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("PASS"), std::string::npos) << out;  // no line per variant by default
  EXPECT_NE(out.find("\nHANG  broken/raise_alone:gloo-ws3-empty_rank-cpu  ("), std::string::npos) << out;
  EXPECT_NE(out.find("distmetrics: 4 passed, 1 failed, "), std::string::npos) << out;

  std::ifstream json_file(dir / "report.json");
  const auto report = nlohmann::json::parse(json_file);
  // Each rank's share of the data, and its collectives with the script step that issued them.
  const nlohmann::json* no_sync = nullptr;
  const nlohmann::json* raise_alone = nullptr;
  const nlohmann::json* passed = nullptr;
  const nlohmann::json* gather = nullptr;
  for (const auto& v : report["variants"]) {
    if (v["id"] == "broken/gather_per_element:gloo-ws2-uneven-cpu") gather = &v;
    if (v["id"] == "broken/correct_mean:gloo-ws2-uneven-cpu") passed = &v;
    if (v["id"] == "broken/no_sync:gloo-ws2-uneven-cpu") no_sync = &v;
    if (v["id"] == "broken/raise_alone:gloo-ws3-empty_rank-cpu") raise_alone = &v;
  }
  ASSERT_TRUE(no_sync && raise_alone && passed && gather);
  // A variant that passed keeps its ranks' shares but not their collectives (reports stay small).
  EXPECT_EQ((*passed)["ranks"][1]["batches"].get<int>() + (*passed)["ranks"][0]["batches"].get<int>(), 10);
  EXPECT_EQ((*passed)["ranks"][0]["trace"].size(), 0u);
  // A rank that finished its script says which step issued each collective.
  const auto& finished = (*gather)["ranks"][1];
  ASSERT_GT(finished["trace"].size(), 0u);
  EXPECT_EQ(finished["state"], "finished");
  EXPECT_EQ(finished["trace"][0]["script_step"], 2);  // the first compute
  EXPECT_EQ(finished["trace"][0]["step"], "compute");
  ASSERT_EQ((*no_sync)["ranks"].size(), 2u);
  EXPECT_EQ((*no_sync)["ranks"][0]["samples"].get<int>() + (*no_sync)["ranks"][1]["samples"].get<int>(), 37);
  EXPECT_EQ((*no_sync)["tolerance"]["rtol"], 1e-6);
  const auto& waiting = (*raise_alone)["ranks"][0];
  EXPECT_EQ(waiting["blocked_in"], 0);
  EXPECT_EQ(waiting["trace"][0]["op"], "all_reduce(sum)");
  EXPECT_EQ(waiting["trace"][0]["dtype"], "int64");
  EXPECT_EQ((*raise_alone)["ranks"][2]["trace"].size(), 0u);
  EXPECT_EQ((*raise_alone)["ranks"][2]["state"], "finished");
  EXPECT_NE((*raise_alone)["ranks"][2]["error"].get<std::string>().find("NotComputableError"), std::string::npos);

  // The page's timeline of the hang: rank 0 blocked in the first collective, which rank 2 (it
  // raised and left) never issued.
  std::ifstream html_file(dir / "report.html");
  std::stringstream html;
  html << html_file.rdbuf();
  EXPECT_NE(html.str().find("<p class=\"diverge-note\">The ranks diverge at collective #0: rank 0 all_reduce(sum) (blocked); "),
            std::string::npos)
      << html.str();
  EXPECT_NE(html.str().find("; rank 2 issued none.</p>"), std::string::npos) << html.str();
  EXPECT_NE(html.str().find("\">FAILED: 3 of 7 variants did not pass (1 fail, "), std::string::npos) << html.str();

  std::ifstream md_file(dir / "report.md");
  std::stringstream md;
  md << md_file.rdbuf();
  EXPECT_NE(md.str().find("| `broken/no_sync` | ✅ 1/1 pass | ❌ 1/1 fail |"), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("<details><summary>⏳ <b>HANG</b> <code>broken/raise_alone:gloo-ws3-empty_rank-cpu</code>"),
            std::string::npos)
      << md.str();
  if (!(dir_env && *dir_env)) fs::remove_all(dir);
}

TEST(Cli, AnUnknownSubcommandIsBadInputNamingItWithOrWithoutHelp) {
  std::string out, err;
  EXPECT_EQ(cli({"lisst"}, out, err), 2) << out << err;
  EXPECT_NE(err.find("distmetrics: unknown subcommand 'lisst' (did you mean 'list'?)"), std::string::npos) << err;
  EXPECT_TRUE(out.empty()) << out;
  // --help does not turn a subcommand that does not exist into the main help (exit 0).
  EXPECT_EQ(cli({"lisst", "--help"}, out, err), 2) << out << err;
  EXPECT_NE(err.find("unknown subcommand 'lisst' (did you mean 'list'?)"), std::string::npos) << err;
  EXPECT_TRUE(out.empty()) << out;
  EXPECT_EQ(cli({"--help", "fuzz"}, out, err), 2) << out << err;
  EXPECT_NE(err.find("unknown subcommand 'fuzz' (the subcommands are 'list', 'validate', 'run', 'serve', 'conform', "
                     "'metrics', 'explore', 'tables')"),
            std::string::npos)
      << err;
  EXPECT_EQ(cli({"fuzz", "--help"}, out, err), 2) << out << err;
  EXPECT_NE(err.find("unknown subcommand 'fuzz'"), std::string::npos) << err;
  // The subcommands that exist keep their help, and the main help and a missing subcommand stay as they were.
  EXPECT_EQ(cli({"list", "--help"}, out, err), 0) << out << err;
  EXPECT_NE(out.find("print the variant ids the scenarios expand into"), std::string::npos) << out;
  EXPECT_EQ(cli({"--help"}, out, err), 0) << out << err;
  EXPECT_NE(out.find("Subcommands:"), std::string::npos) << out;
  EXPECT_EQ(cli({}, out, err), 2) << out << err;
  EXPECT_NE(err.find("A subcommand is required"), std::string::npos) << err;
}

// `tables --json` prints tables_json() (its fields: engine_tables_test.cpp); without --json, a line per table.
TEST(Cli, TablesPrintsTheTablesJson) {
  std::string out, err;
  ASSERT_EQ(cli({"tables", "--json"}, out, err), 0) << out << err;
  const auto printed = nlohmann::json::parse(out);
  EXPECT_EQ(printed, dh::tables_json());
  EXPECT_EQ(printed.at("outcomes").size(), dh::outcome_kinds().size());
  EXPECT_EQ(printed.at("exit_codes").at("bad_input").get<int>(), distmetrics::app::kBadInput);
  ASSERT_EQ(cli({"tables"}, out, err), 0) << out << err;
  EXPECT_NE(out.find("outcomes: pass, fail, "), std::string::npos) << out;
  EXPECT_NE(out.find("exit_codes: bad_input 2, "), std::string::npos) << out;
}
