// The CLI, in this process (so that its rank pool's workers are this binary and know the broken
// metrics of the engine tests): reports and exit codes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "distmetrics/app/cli.h"
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
  EXPECT_EQ(cli({"run", kDir + "/correct_mean.toml", "--world-sizes", "2", "--shard", "even", "--json",
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
                                       {"backend", "mpi"},
                                       {"world_size", 1},
                                       {"shard", "even"},
                                       {"placement", "cpu"},
                                       {"deadline", 30.0},
                                       {"markers", {"mpi"}},
                                       {"skip", nullptr}}));
  EXPECT_EQ(cli({"validate", kDir}, out, err), 0) << out;
  EXPECT_NE(out.find("distmetrics: 11 scenario file(s): 11 valid, 0 with errors (0 error(s))"), std::string::npos) << out;
  fs::remove_all(tmp);
}

TEST(Cli, SelectionOptionsTakeOneValueSoPathsMayFollow) {
  std::string out, err;
  // "--world-sizes 2 <path>": the path is a path, not a second world size.
  ASSERT_EQ(cli({"list", "--world-sizes", "2", "--backend", "gloo", kDir + "/correct_mean.toml", "--shard", "even", "--json"}, out, err), 0)
      << out << err;
  const auto listed = nlohmann::json::parse(out);
  ASSERT_EQ(listed.size(), 1u) << out;
  EXPECT_EQ(listed[0]["id"], "broken/correct_mean:gloo-ws2-even-cpu");
  // The listing carries the scenario's deadline, for runners that wrap each variant in a timeout.
  EXPECT_GT(listed[0]["deadline"].get<double>(), 0.0);
  // Repeating an option adds to it.
  ASSERT_EQ(cli({"list", "--world-sizes", "1", "--world-sizes", "2", kDir + "/correct_mean.toml", "--backend", "gloo", "--shard",
                 "even"},
                out, err),
            0)
      << out << err;
  EXPECT_EQ(out, "broken/correct_mean:gloo-ws1-even-cpu\nbroken/correct_mean:gloo-ws2-even-cpu\n");
}
