// Hang verdict latency: how long after a variant starts the supervisor returns its hang verdict,
// against the variant's deadline, when one rank of two
// - skips a collective (a desync: it finishes its task while its peer waits), or
// - stalls silently (it sleeps; its peer waits in the collective until its own timeout).
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <thread>

#include "common.h"
#include "distmetrics/runtime/task.h"

namespace distmetrics::bench {
namespace {

nlohmann::json hang_task(runtime::TaskContext& ctx) {
  if (ctx.rank == 1) {
    if (ctx.params.at("mode") == "stall") std::this_thread::sleep_for(std::chrono::hours(1));
    return nlohmann::json::object();  // desync: leaves without the collective
  }
  ctx.comm.all_reduce_copy(at::ones({1}), runtime::ReduceOp::Sum);
  return nlohmann::json::object();
}

const bool task_registered = [] {
  runtime::TaskRegistry::instance().add("bench_hang", hang_task);
  return true;
}();

void BM_hang(benchmark::State& state, const char* mode) {
  const auto deadline = std::chrono::milliseconds(sized(3000, 1000));
  runtime::Job request;
  request.id = std::string("bench/hang/") + mode;
  request.task = "bench_hang";
  request.params = {{"mode", mode}};
  request.deadline = deadline;
  for (auto _ : state) {
    run_task(2, "bench_noop", {});  // a hang ends the pool: start it again outside the timing
    const runtime::JobResult run = pool(2).run(request);
    if (run.status != runtime::RunStatus::Hang) {
      state.SkipWithError((std::string("expected a hang verdict, got ") + runtime::to_string(run.status)).c_str());
      break;
    }
    state.SetIterationTime(run.seconds);
  }
  state.counters["deadline_ms"] = static_cast<double>(deadline.count());
}

const bool registered = [] {
  benchmark::RegisterBenchmark("hang/desync", BM_hang, "desync")
      ->Iterations(sized(3, 1))->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("hang/stall", BM_hang, "stall")
      ->Iterations(sized(2, 1))->UseManualTime()->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
}  // namespace distmetrics::bench
