// The distmetrics CLI as users run it, from exec to exit:
// - start-up: `distmetrics run` on one trivial variant at world size 2 (the table subtracts the
//   steady-state cost of that variant, measured in the same run), and `distmetrics list --help`
//   (loading the command proper, the part of start-up every exec'd process pays; `--help` alone
//   is answered by the front without LibTorch);
// - 40 trivial variants in one run, wall time per variant, start-up included;
// - the whole scenario library on gloo at world sizes 1, 2 and 4: variants per second.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <nlohmann/json.hpp>

#include "common.h"

namespace distmetrics::bench {
namespace {

// Runs the CLI; returns its JSON report. A non-zero exit is an error unless allow_failures
// (the library holds expected failures only, but a slow machine can still time one out).
nlohmann::json run_cli(const std::vector<std::string>& args, const std::string& report, bool allow_failures = false) {
  std::vector<std::string> argv{cli_path(), "run"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--quiet", "--json", report});
  const pid_t pid = spawn(argv);
  try {
    wait_all({pid}, std::chrono::seconds(1800), "distmetrics run");
  } catch (const std::exception&) {
    if (!allow_failures) throw;
  }
  return nlohmann::json::parse(read_file(report));
}

// CPU seconds (user + system) of every descendant reaped so far: the CLI, and through it its
// workers and helpers. Unlike wall time, it does not grow with the load others put on the machine.
double children_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

void BM_startup(benchmark::State& state) {
  const std::string dir = make_temp_dir("startup");
  write_file(dir + "/trivial.toml", trivial_scenario_toml(2));
  const double cpu_before = children_cpu_seconds();
  for (auto _ : state) {
    try {
      const auto report = run_cli({dir + "/trivial.toml"}, dir + "/report.json");
      if (report.at("summary").at("pass") != 1) throw std::runtime_error("the trivial variant did not pass");
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
  if (state.iterations() > 0) state.counters["cpu_ms"] = (children_cpu_seconds() - cpu_before) * 1e3 / state.iterations();
  remove_tree(dir);
}

// Loading the command proper alone (libdistmetrics_cli.so, LibTorch and its ~300 shared
// libraries, static initialisation, exit): what every exec'd process pays, the supervisor's share
// of start-up. A command's help: `--help` alone is the front's, which loads none of it.
void BM_load(benchmark::State& state) {
  for (auto _ : state) {
    try {
      wait_all({spawn({cli_path(), "list", "--help"})}, std::chrono::seconds(120), "distmetrics list --help");
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
}

void BM_suite(benchmark::State& state) {
  const int variants = sized(40, 4);
  const std::string dir = make_temp_dir("suite");
  for (int i = 0; i < variants; ++i) {
    write_file(dir + "/trivial_" + std::to_string(100 + i) + ".toml", trivial_scenario_toml(2, i + 1));
  }
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      const auto report = run_cli({dir}, dir + "/report.json");
      if (report.at("summary").at("pass") != variants) throw std::runtime_error("not every trivial variant passed");
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
    state.SetIterationTime(seconds_since(t0) / variants);  // per variant
  }
  state.counters["variants"] = variants;
  remove_tree(dir);
}

void BM_library(benchmark::State& state) {
  const std::string dir = make_temp_dir("library");
  nlohmann::json summary;
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      summary = run_cli({scenarios_dir(), "--backend", "gloo", "--world-sizes", "1,2,4", "--placement", "cpu"},
                        dir + "/report.json", true).at("summary");
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
    seconds = seconds_since(t0);
  }
  if (!summary.is_null()) {
    const double ran = summary.at("total").get<double>() - summary.at("skip").get<double>();
    state.counters["variants"] = ran;
    state.counters["passed"] = summary.at("pass").get<double>();
    state.counters["variants_per_s"] = seconds > 0 ? ran / seconds : 0.0;
  }
  remove_tree(dir);
}

const bool registered = [] {
  benchmark::RegisterBenchmark("cli/startup_one_variant", BM_startup)
      ->Iterations(sized(5, 1))->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("cli/load_help", BM_load)
      ->Iterations(sized(5, 1))->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("cli/suite_per_variant", BM_suite)
      ->Iterations(sized(2, 1))->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("cli/library", BM_library)->Iterations(1)->UseRealTime()->Unit(benchmark::kSecond);
  return true;
}();

}  // namespace
}  // namespace distmetrics::bench
