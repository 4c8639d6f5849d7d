// Per-variant cost at steady state (the trivial scenario on a warm rank pool, judged by the
// engine) against the two things a user would otherwise pay per test:
// - spawn-per-test: N fresh processes that each build a Gloo group over a FileStore, run one
//   all_reduce and exit (MultiProcessTestCase, torcheval's launcher), in Python with torch (what
//   users run) and in C++ with LibTorch (the cheapest possible spawn);
// - the floor: a fresh Gloo group on already running processes plus one small all_reduce.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "common.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/harness/engine.h"
#include "distmetrics/runtime/task.h"
#include "gloo_group.h"

namespace distmetrics::bench {
namespace {

using Clock = std::chrono::steady_clock;

// --- The floor ---------------------------------------------------------------------------------

// `reps` times: a fresh Gloo group over a fresh prefix of one TCPStore (hosted by rank 0, its
// port broadcast once), one all_reduce of one float, the group destroyed.
nlohmann::json floor_task(runtime::TaskContext& ctx) {
  c10d::TCPStoreOptions options;
  options.isServer = ctx.rank == 0;
  options.waitWorkers = false;
  options.timeout = std::chrono::seconds(60);
  at::Tensor port = at::zeros({1}, at::kLong);
  c10::intrusive_ptr<c10d::TCPStore> store;
  if (ctx.rank == 0) {
    options.port = 0;
    store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
    port.fill_(static_cast<std::int64_t>(store->getPort()));
  }
  ctx.comm.broadcast(port, 0);
  if (ctx.rank != 0) {
    options.port = static_cast<std::uint16_t>(port.item<std::int64_t>());
    store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
  }
  const int reps = ctx.params.at("reps");
  std::vector<double> seconds;
  for (int i = 0; i < reps + 1; ++i) {
    const auto t0 = Clock::now();
    {
      auto prefixed = c10::make_intrusive<c10d::PrefixStore>("floor" + std::to_string(i) + "/", store);
      auto group = fresh_gloo_group(prefixed, ctx.rank, ctx.world_size);
      at::Tensor one = at::ones({1});
      raw_all_reduce(*group, one);
    }
    if (i > 0) seconds.push_back(seconds_since(t0));  // the first one warms up
  }
  ctx.comm.barrier();  // rank 0's store outlives every client's use of it
  return {{"seconds", median(seconds)}};
}

const bool task_registered = [] {
  runtime::TaskRegistry::instance().add("bench_floor", floor_task);
  runtime::TaskRegistry::instance().add("bench_noop", [](runtime::TaskContext&) { return nlohmann::json::object(); });
  return true;
}();

void BM_floor(benchmark::State& state) {
  const int ws = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const auto result = run_task(ws, "bench_floor", {{"reps", sized(40, 2)}});
    state.SetIterationTime(result.at("seconds").get<double>());
    state.counters["median_ms"] = result.at("seconds").get<double>() * 1e3;
  }
}

// --- Steady state ------------------------------------------------------------------------------

void BM_steady(benchmark::State& state) {
  const int ws = static_cast<int>(state.range(0));
  const std::string dir = make_temp_dir("steady");
  const std::string file = dir + "/trivial.toml";
  write_file(file, trivial_scenario_toml(ws));
  const harness::LoadResult loaded = harness::load_scenario(file, "bench/trivial");
  remove_tree(dir);
  if (!loaded.scenario) {
    state.SkipWithError("the trivial scenario does not load");
    return;
  }
  const harness::Scenario& scenario = *loaded.scenario;
  const harness::Variant variant = harness::expand_variants(scenario, 0).at(0);
  harness::Engine engine;
  runtime::RankPool& runner = pool(ws);
  engine.run(scenario, variant, runner);  // the pool is warm from here on
  int passed = 0;
  std::vector<double> seconds;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const harness::Verdict v = engine.run(scenario, variant, runner);
    seconds.push_back(seconds_since(t0));
    state.SetIterationTime(seconds.back());
    passed += v.outcome == harness::Outcome::Pass;
  }
  if (passed != state.iterations()) state.SkipWithError("a trivial variant did not pass");
  state.counters["median_ms"] = median(seconds) * 1e3;
}

// --- Spawn per test ----------------------------------------------------------------------------

constexpr const char* kPythonChild = R"(
import sys, torch, torch.distributed as dist
rank, world_size, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
dist.init_process_group("gloo", init_method="file://" + path, rank=rank, world_size=world_size)
t = torch.ones(1)
dist.all_reduce(t)
assert t.item() == world_size
dist.destroy_process_group()
)";

void spawn_per_test(benchmark::State& state, bool python) {
  const int ws = static_cast<int>(state.range(0));
  const std::string dir = make_temp_dir("spawn");
  int test = 0;
  for (auto _ : state) {
    const std::string store = dir + "/store" + std::to_string(test++);
    std::vector<pid_t> pids;
    for (int r = 0; r < ws; ++r) {
      const std::vector<std::string> argv =
          python ? std::vector<std::string>{python_path(), "-c", kPythonChild, std::to_string(r), std::to_string(ws), store}
                 : std::vector<std::string>{self_path(), "--bench-spawn-child", std::to_string(r), std::to_string(ws), store};
      pids.push_back(spawn(argv));
    }
    try {
      wait_all(pids, std::chrono::seconds(120), python ? "python spawn-per-test" : "C++ spawn-per-test");
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
  remove_tree(dir);
}

void BM_spawn_python(benchmark::State& state) { spawn_per_test(state, true); }
void BM_spawn_cxx(benchmark::State& state) { spawn_per_test(state, false); }

const bool registered = [] {
  for (int ws : {2, 4}) {
    benchmark::RegisterBenchmark("variant/steady", BM_steady)->Arg(ws)->ArgName("ws")
        ->Iterations(sized(40, 2))->UseManualTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("variant/floor", BM_floor)->Arg(ws)->ArgName("ws")
        ->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("variant/spawn_python", BM_spawn_python)->Arg(ws)->ArgName("ws")
        ->Iterations(sized(3, 1))->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("variant/spawn_cxx", BM_spawn_cxx)->Arg(ws)->ArgName("ws")
        ->Iterations(sized(3, 1))->UseRealTime()->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace

// The C++ spawn-per-test child: one Gloo group over a FileStore, one all_reduce, exit.
int spawn_child_main(int rank, int world_size, const std::string& path) {
  auto store = c10::make_intrusive<c10d::FileStore>(path, world_size);
  auto group = fresh_gloo_group(store, rank, world_size);
  at::Tensor t = at::ones({1});
  raw_all_reduce(*group, t);
  return t.item<float>() == static_cast<float>(world_size) ? 0 : 1;
}

}  // namespace distmetrics::bench
