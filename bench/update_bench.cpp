// Update throughput: a reference metric's update() over 1M samples (10 classes, batches of
// 16384) against the raw ATen a metric must do on the same batches (argmax + compare + sum;
// bincount of C*t+p; ...). One thread, as on a rank; medians of interleaved passes.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>
#include <memory>

#include "common.h"
#include "distmetrics/metrics/registry.h"

namespace distmetrics::bench {
namespace {

constexpr std::int64_t kClasses = 10;
constexpr std::int64_t kBatch = 16384;

struct Data {
  std::vector<at::Tensor> logits;   // [B, 10] float32
  std::vector<at::Tensor> labels;   // [B] int64 in [0, 10)
  std::vector<at::Tensor> values;   // [B] float32 (regression predictions, or scores)
  std::vector<at::Tensor> truth;    // [B] float32 (regression targets)
  std::vector<at::Tensor> binary;   // [B] int64 0/1
  std::int64_t samples = 0;
};

const Data& data() {
  static const Data d = [] {
    at::set_num_threads(1);
    Data out;
    out.samples = sized<std::int64_t>(1'000'000, 65'536);
    auto gen = at::make_generator<at::CPUGeneratorImpl>(16);
    for (std::int64_t from = 0; from < out.samples; from += kBatch) {
      const std::int64_t n = std::min(kBatch, out.samples - from);
      out.logits.push_back(at::randn({n, kClasses}, gen, at::kFloat));
      out.labels.push_back(at::randint(kClasses, {n}, gen, at::kLong));
      out.values.push_back(at::randn({n}, gen, at::kFloat));
      out.truth.push_back(at::randn({n}, gen, at::kFloat));
      out.binary.push_back(at::randint(2, {n}, gen, at::kLong));
    }
    return out;
  }();
  return d;
}

struct Case {
  std::string metric;
  nlohmann::json params;
  // The batch the metric gets for batch i.
  std::function<metrics::Batch(const Data&, std::size_t)> batch;
  // The raw ATen work for batch i, accumulated into `acc` (sized by init).
  std::function<void(const Data&, std::size_t, std::vector<at::Tensor>& acc)> raw;
  std::function<std::vector<at::Tensor>()> init;
};

metrics::Batch scores_batch(const Data& d, std::size_t i) { return {d.logits[i], d.labels[i], {}, {}}; }

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"Accuracy", {{"task", "multiclass"}, {"num_classes", kClasses}}, scores_batch,
       [](const Data& d, std::size_t i, std::vector<at::Tensor>& acc) {
         acc[0] += d.logits[i].argmax(1).eq(d.labels[i]).sum();
         acc[1] += d.labels[i].numel();
       },
       [] { return std::vector<at::Tensor>{at::zeros({}, at::kLong), at::zeros({}, at::kLong)}; }},
      {"ConfusionMatrix", {{"num_classes", kClasses}}, scores_batch,
       [](const Data& d, std::size_t i, std::vector<at::Tensor>& acc) {
         const at::Tensor cells = d.labels[i] * kClasses + d.logits[i].argmax(1);
         acc[0] += at::bincount(cells, {}, kClasses * kClasses).view({kClasses, kClasses});
       },
       [] { return std::vector<at::Tensor>{at::zeros({kClasses, kClasses}, at::kLong)}; }},
      {"Precision", {{"task", "multiclass"}, {"num_classes", kClasses}, {"average", "macro"}}, scores_batch,
       [](const Data& d, std::size_t i, std::vector<at::Tensor>& acc) {
         const at::Tensor pred = d.logits[i].argmax(1);
         const at::Tensor& t = d.labels[i];
         acc[0] += at::bincount(t.masked_select(pred.eq(t)), {}, kClasses);
         acc[1] += at::bincount(pred, {}, kClasses);
         acc[2] += at::bincount(t, {}, kClasses);
       },
       [] {
         return std::vector<at::Tensor>{at::zeros({kClasses}, at::kLong), at::zeros({kClasses}, at::kLong),
                                        at::zeros({kClasses}, at::kLong)};
       }},
      {"MeanSquaredError", nlohmann::json::object(),
       [](const Data& d, std::size_t i) { return metrics::Batch{d.values[i], d.truth[i], {}, {}}; },
       // In float64, as the reference metrics promise (sum_dtype float64): the same arithmetic.
       [](const Data& d, std::size_t i, std::vector<at::Tensor>& acc) {
         acc[0] += (d.values[i].to(at::kDouble) - d.truth[i].to(at::kDouble)).square().sum();
         acc[1] += d.values[i].numel();
       },
       [] { return std::vector<at::Tensor>{at::zeros({}, at::kDouble), at::zeros({}, at::kLong)}; }},
      {"RocAuc", nlohmann::json::object(),
       [](const Data& d, std::size_t i) { return metrics::Batch{d.values[i], d.binary[i], {}, {}}; },
       // An epoch metric must keep its own copy of every score and target.
       [](const Data& d, std::size_t i, std::vector<at::Tensor>& acc) {
         acc.push_back(d.values[i].to(at::kDouble));
         acc.push_back(d.binary[i].clone());
       },
       [] { return std::vector<at::Tensor>{}; }},
  };
  return all;
}

// One pass over the data through the metric, then one raw pass, alternately (so both see the same
// load), `rounds` times; the medians are the result.
void BM_update(benchmark::State& state, const Case* c) {
  const Data& d = data();
  auto metric = metrics::MetricRegistry::reference().make(c->metric, c->params);
  std::vector<double> metric_s, raw_s;
  std::vector<at::Tensor> acc;  // like the metric's state, kept until the next pass starts
  const int rounds = sized(9, 1);
  for (auto _ : state) {
    for (int round = 0; round < rounds + 1; ++round) {  // round 0 warms up
      auto t0 = std::chrono::steady_clock::now();
      metric->reset();
      for (std::size_t i = 0; i < d.logits.size(); ++i) metric->update(c->batch(d, i));
      const double m = seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
      acc = c->init();
      for (std::size_t i = 0; i < d.logits.size(); ++i) c->raw(d, i, acc);
      benchmark::DoNotOptimize(acc);
      const double r = seconds_since(t0);
      if (round > 0) {
        metric_s.push_back(m);
        raw_s.push_back(r);
      }
    }
    state.SetIterationTime(median(metric_s));
  }
  state.counters["metric_ms"] = median(metric_s) * 1e3;
  state.counters["raw_ms"] = median(raw_s) * 1e3;
  state.counters["samples"] = static_cast<double>(d.samples);
}

const bool registered = [] {
  for (const Case& c : cases()) {
    benchmark::RegisterBenchmark(("update/" + c.metric).c_str(), BM_update, &c)
        ->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
}  // namespace distmetrics::bench
