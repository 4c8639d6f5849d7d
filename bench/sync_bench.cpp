// compute() sync: a reference metric's sync of its states (the collectives of compute(), with
// the state copies, coalescing, tracing and deadlines) against raw c10d collectives of the same
// bytes on the same Gloo group, on a warm rank pool at world size 2 (medians of interleaved
// repetitions). Also counts the collectives
// one compute() issues against the number of (reduction, dtype) groups of the metric's states.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <set>

#include "common.h"
#include "distmetrics/runtime/task.h"
#include "distmetrics/metrics/registry.h"
#include "distmetrics/metrics/stateful_metric.h"
#include "gloo_group.h"

namespace distmetrics::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The local batch each rank feeds before syncing.
metrics::Batch local_batch(const std::string& kind, std::int64_t n, std::int64_t classes, int rank) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(100 + rank);
  if (kind == "scores") return {at::randn({n, classes}, gen, at::kFloat), at::randint(classes, {n}, gen, at::kLong), {}, {}};
  if (kind == "regression") return {at::randn({n}, gen, at::kFloat), at::randn({n}, gen, at::kFloat), {}, {}};
  return {at::rand({n}, gen, at::kDouble), at::randint(2, {n}, gen, at::kLong), {}, {}};  // binary scores
}

// The raw c10d work of one sync: per (reduction, dtype) group one all_reduce of the group's
// bytes; per gather dtype one all_gather of this rank's rows (sizes known to be equal, so no
// shape exchange: the strictest baseline).
struct RawSync {
  std::vector<std::pair<at::Tensor, c10d::ReduceOp>> reduces;
  std::vector<at::Tensor> gathers;
  void run(c10d::ProcessGroupGloo& group, int world_size) {
    for (auto& [buffer, op] : reduces) {
      std::vector<at::Tensor> tensors{buffer};
      c10d::AllreduceOptions options;
      options.reduceOp = op;
      group.allreduce(tensors, options)->wait();
    }
    for (auto& local : gathers) {
      std::vector<std::vector<at::Tensor>> outputs(1);
      for (int r = 0; r < world_size; ++r) outputs[0].push_back(at::empty_like(local));
      std::vector<at::Tensor> inputs{local};
      group.allgather(outputs, inputs)->wait();
    }
  }
};

c10d::ReduceOp c10d_op(metrics::Reduction r) {
  switch (r) {
    case metrics::Reduction::Sum: return c10d::ReduceOp::SUM;
    case metrics::Reduction::Max: return c10d::ReduceOp::MAX;
    case metrics::Reduction::Min: return c10d::ReduceOp::MIN;
    case metrics::Reduction::Prod: return c10d::ReduceOp::PRODUCT;
    case metrics::Reduction::Gather: break;
  }
  throw std::logic_error("gather has no reduce op");
}

nlohmann::json sync_task(runtime::TaskContext& ctx) {
  const auto& p = ctx.params;
  auto metric = metrics::MetricRegistry::reference().make(p.at("metric"), p.at("params"));
  auto* stateful = dynamic_cast<metrics::StatefulMetric*>(metric.get());
  if (stateful == nullptr) throw std::runtime_error("not a StatefulMetric");
  metric->set_communicator(&ctx.comm);
  const std::int64_t local = p.at("samples").get<std::int64_t>() / ctx.world_size;
  metric->update(local_batch(p.at("data"), local, p.value("classes", 2), ctx.rank));

  // Collectives of one compute() and the metric's (reduction, dtype) groups.
  const auto before = ctx.comm.collectives_issued();
  metric->compute();
  const auto collectives = ctx.comm.collectives_issued() - before;
  std::set<std::pair<int, int>> groups;
  RawSync raw;
  const metrics::StateValues values = stateful->sync();
  std::map<std::pair<int, int>, std::vector<at::Tensor>> by_group;
  for (const auto& s : stateful->states()) {
    groups.insert({static_cast<int>(s.reduction), static_cast<int>(s.dtype)});
    // Local state bytes: this rank's rows for gather states (its 1/world_size share of the synced rows).
    at::Tensor v = values[s.name].reshape(-1);
    if (s.reduction == metrics::Reduction::Gather) v = v.narrow(0, 0, v.numel() / ctx.world_size);
    by_group[{static_cast<int>(s.reduction), static_cast<int>(s.dtype)}].push_back(v);
  }
  for (auto& [key, parts] : by_group) {
    const auto reduction = static_cast<metrics::Reduction>(key.first);
    at::Tensor flat = at::cat(parts).contiguous();
    if (reduction == metrics::Reduction::Gather) raw.gathers.push_back(flat);
    else raw.reduces.push_back({flat, c10d_op(reduction)});
  }

  auto group = gloo_group_of(ctx.comm);
  const int reps = p.at("reps");
  std::vector<double> metric_s, raw_s;
  for (int i = 0; i < 2; ++i) {  // warm both paths
    stateful->sync();
    raw.run(*group, ctx.world_size);
  }
  for (int i = 0; i < reps; ++i) {  // interleaved, so both see the same load
    auto t0 = Clock::now();
    benchmark::DoNotOptimize(stateful->sync());
    metric_s.push_back(seconds_since(t0));
    t0 = Clock::now();
    raw.run(*group, ctx.world_size);
    raw_s.push_back(seconds_since(t0));
  }
  return {{"metric_s", median(metric_s)}, {"raw_s", median(raw_s)}, {"collectives", collectives},
          {"groups", groups.size()}};
}

const bool task_registered = [] {
  runtime::TaskRegistry::instance().add("bench_sync", sync_task);
  return true;
}();

struct SyncCase {
  std::string label;
  std::string metric;
  nlohmann::json params;
  std::string data;
  std::int64_t classes;
  std::int64_t samples;
};

void BM_sync(benchmark::State& state, const SyncCase* c) {
  const int ws = static_cast<int>(state.range(0));
  const nlohmann::json params = {{"metric", c->metric}, {"params", c->params}, {"data", c->data},
                                 {"classes", c->classes}, {"samples", sized<std::int64_t>(c->samples, 2000)},
                                 {"reps", sized(200, 5)}};
  nlohmann::json result;
  for (auto _ : state) {
    result = run_task(ws, "bench_sync", params);
    state.SetIterationTime(result.at("metric_s").get<double>());
  }
  state.counters["metric_ms"] = result.at("metric_s").get<double>() * 1e3;
  state.counters["raw_ms"] = result.at("raw_s").get<double>() * 1e3;
  state.counters["collectives"] = result.at("collectives").get<double>();
  state.counters["groups"] = result.at("groups").get<double>();
}

const std::vector<SyncCase>& sync_cases() {
  static const std::vector<SyncCase> all = {
      {"Accuracy", "Accuracy", {{"task", "multiclass"}, {"num_classes", 10}}, "scores", 10, 20000},
      {"ConfusionMatrix_C100", "ConfusionMatrix", {{"num_classes", 100}}, "scores", 100, 20000},
      {"MeanAbsoluteError", "MeanAbsoluteError", nlohmann::json::object(), "regression", 1, 20000},
      {"Precision_macro", "Precision", {{"task", "multiclass"}, {"num_classes", 10}, {"average", "macro"}}, "scores", 10,
       20000},
      {"RocAuc_100k", "RocAuc", nlohmann::json::object(), "binary", 2, 100000},
  };
  return all;
}

const bool registered = [] {
  for (const auto& c : sync_cases()) {
    benchmark::RegisterBenchmark(("sync/" + c.label).c_str(), BM_sync, &c)
        ->Arg(2)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
}  // namespace distmetrics::bench
