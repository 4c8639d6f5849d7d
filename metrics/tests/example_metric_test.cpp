// The example of docs/writing-a-metric.md, compiled and tested so that the document stays true.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "distmetrics/runtime/comm.h"
#include "distmetrics/metrics/errors.h"
#include "distmetrics/metrics/input_checks.h"
#include "distmetrics/metrics/registry.h"
#include "distmetrics/metrics/stateful_metric.h"

namespace example {

using namespace distmetrics::metrics;

// --- begin example (docs/writing-a-metric.md) ---
// Mean absolute percentage error: mean over every element of |input - target| / |target|.
// Inputs: input and target float [N, *], same shape, target != 0. Every element is a sample.
// States: ratio_sum (float64, SUM), worst (float64, MAX), elements (int64, SUM):
// three collectives per compute. NaN propagates.
class MeanAbsolutePercentageError : public StatefulMetric {
 public:
  MeanAbsolutePercentageError() : StatefulMetric("MeanAbsolutePercentageError") {
    add_state("ratio_sum", at::zeros({}, at::kDouble), Reduction::Sum);
    add_state("worst", at::full({}, -INFINITY, at::kDouble), Reduction::Max);
    add_state("elements", at::zeros({}, at::kLong), Reduction::Sum);
  }

 protected:
  void update_state(const Batch& batch) override {
    // 1. Check the whole batch first: a rejected batch must leave the state as it was.
    checks::require_defined(name(), "input", batch.input, "predictions shaped [N, *]");
    checks::require_defined(name(), "target", batch.target, "targets shaped like input");
    checks::require_absent(name(), "weight", batch.weight, name() + " takes no sample weights");
    checks::require_floating(name(), "input", batch.input);
    checks::require_floating(name(), "target", batch.target);
    checks::require_same_shape(name(), "target", batch.target, "input", batch.input);
    const at::Tensor target = batch.target.to(at::kDouble);
    if (target.eq(0).any().item<bool>()) {
      throw InputError(name(), "target", "no zero (the error is relative to it)", "a zero");
    }
    // 2. Then change local state only (batch is already on device()).
    const at::Tensor ratio = (batch.input.to(at::kDouble) - target).abs() / target.abs();
    state("ratio_sum") += ratio.sum();
    if (ratio.numel() > 0) state("worst") = at::maximum(state("worst"), ratio.max());
    state("elements") += ratio.numel();
  }

  // Sees synced copies only; decides "no samples anywhere" from the synced count, so every
  // rank raises together.
  Value compute_from(const StateValues& synced) const override {
    const std::int64_t n = synced["elements"].item<std::int64_t>();
    if (n == 0) throw NotComputableError(name(), "no samples on any rank");
    return Value::named({{"mean", synced["ratio_sum"].item<double>() / static_cast<double>(n)},
                         {"worst", synced["worst"].item<double>()}});
  }
};

// Registering it (in your own registry, or a test's) makes it buildable by name.
void register_example(MetricRegistry& registry) {
  registry.add({"MeanAbsolutePercentageError", "regression",
                "mean |input - target| / |target|; input and target float [N,*], target != 0",
                {},
                [](const nlohmann::json&) { return std::make_unique<MeanAbsolutePercentageError>(); }});
}
// --- end example ---

namespace {

Batch batch(std::vector<double> input, std::vector<double> target) {
  Batch b;
  b.input = at::tensor(input, at::kDouble);
  b.target = at::tensor(target, at::kDouble);
  return b;
}

TEST(WritingAMetricExample, ComputesSyncsAndRejectsBadInput) {
  MetricRegistry registry;
  register_example(registry);
  auto metric = registry.make("MeanAbsolutePercentageError", {});
  auto comm = distmetrics::runtime::make_single_process_communicator();
  metric->set_communicator(comm.get());

  EXPECT_THROW(metric->compute(), NotComputableError);
  metric->update(batch({110, 90}, {100, 100}));  // 10%, 10%
  metric->update(batch({1}, {2}));                // 50%
  const std::string digest = metric->state_digest();
  const std::size_t before = comm->collectives_issued();
  const Value v = metric->compute();
  EXPECT_EQ(comm->collectives_issued() - before, 3u);  // (sum, int64), (sum, float64), (max, float64)
  EXPECT_DOUBLE_EQ(v.at("mean").scalar(), 0.7 / 3);
  EXPECT_DOUBLE_EQ(v.at("worst").scalar(), 0.5);
  EXPECT_EQ(metric->state_digest(), digest);
  EXPECT_EQ(dynamic_cast<StatefulMetric&>(*metric).sync_plan(),
            std::vector<std::string>({"all_reduce(sum) int64", "all_reduce(sum) float64", "all_reduce(max) float64"}));

  try {
    metric->update(batch({1, 2}, {1, 0}));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "MeanAbsolutePercentageError: target: expected no zero (the error is relative to it), got a zero");
  }
  EXPECT_EQ(metric->state_digest(), digest);
}

}  // namespace
}  // namespace example
