// multilabel: L independent labels per sample.
#include "making.h"

namespace distmetrics::harness::generators {
namespace {
namespace DISTMETRICS_UNITY_ID {

void make(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::int64_t l = p.at("num_labels");
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream);
  const double rate = p.at("positive_rate"), sep = p.at("separation");
  const std::int64_t n = count_of(rows);
  std::vector<std::int64_t> t(n * l);
  std::vector<double> logits(n * l);
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t j = 0; j < l; ++j) {
      const std::int64_t k = rows[r] * l + j, at = r * l + j;
      t[at] = target.uniform(k) < rate ? 1 : 0;
      logits[at] = sep * (2.0 * t[at] - 1.0) + noise.normal(k);
    }
  }
  out.input = elementwise_output(logits, p.at("output"), {n, l}, float_type(d.dtype));
  out.target = long_tensor(t, {n, l});
}

std::int64_t elements(const nlohmann::json& p) { return 2 * size_param(p, "num_labels", 1); }

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

DataGenerator multilabel() {
  using namespace DISTMETRICS_UNITY_ID;
  DataGenerator g;
  g.name = "multilabel";
  g.description =
      "multilabel classification: input [N, L] probabilities or logits (float) or labels (int64 0/1); target [N, L] int64 0/1";
  g.params = with_common({ranged(param("num_labels", "int", "number of labels L (>= 1)", nullptr), 1, 1000),
                          param("output", "string", "what input holds", "probabilities", {"probabilities", "logits", "labels"}),
                          drawn(ranged(param("positive_rate", "float", "fraction of positive targets", 0.3), 0, 1),
                                {0.0, 1.0, 0.5, 0.05, 0.95}),
                          separation(1.5)});
  g.produces = {{"input", "[N, L]", "float (data.dtype) or int64 (output = labels)",
                 "`[N, L]` probabilities, logits or labels (0/1)"},
                {"target", "[N, L]", "int64", "`[N, L]` int64 0/1"}};
  g.class_count = "num_labels";
  g.elements_per_sample = elements;
  g.make = make;
  return g;
}

}  // namespace distmetrics::harness::generators
