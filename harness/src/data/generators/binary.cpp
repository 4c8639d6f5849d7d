// binary: scores or labels of one class against targets 0/1.
#include "making.h"

namespace distmetrics::harness::generators {
namespace {
namespace DISTMETRICS_UNITY_ID {

void make(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream);
  const double rate = p.at("positive_rate"), sep = p.at("separation");
  const std::int64_t n = count_of(rows);
  std::vector<std::int64_t> t(n);
  std::vector<double> logits(n);
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = rows[r];
    t[r] = target.uniform(i) < rate ? 1 : 0;
    logits[r] = sep * (2.0 * t[r] - 1.0) + noise.normal(i);
  }
  out.input = elementwise_output(logits, p.at("output"), {n}, float_type(d.dtype));
  out.target = long_tensor(t, {n});
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

DataGenerator binary() {
  using namespace DISTMETRICS_UNITY_ID;
  DataGenerator g;
  g.name = "binary";
  g.description = "binary classification: input [N] probabilities or logits (float) or labels (int64 0/1); target [N] int64 0/1";
  g.params = with_common({param("output", "string", "what input holds", "probabilities", {"probabilities", "logits", "labels"}),
                          drawn(ranged(param("positive_rate", "float", "fraction of positive targets (imbalance)", 0.5), 0, 1),
                                {0.0, 1.0, 0.5, 0.05, 0.95}),
                          separation(1.5)});
  g.produces = {{"input", "[N]", "float (data.dtype) or int64 (output = labels)",
                 "`[N]` probabilities, logits (float) or labels (int64 0/1)"},
                {"target", "[N]", "int64", "`[N]` int64 0/1"}};
  g.make = make;
  return g;
}

}  // namespace distmetrics::harness::generators
