// multiclass: class scores or labels against targets in [0, C).
#include "making.h"

namespace distmetrics::harness::generators {
namespace {
namespace DISTMETRICS_UNITY_ID {

void make(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::int64_t c = p.at("num_classes");
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream);
  const auto cdf = class_cdf(p.at("class_weights"), c);
  const double sep = p.at("separation");
  const std::int64_t n = count_of(rows);
  std::vector<std::int64_t> t(n);
  Scores s{std::vector<double>(n * c), n, c};
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = rows[r];
    t[r] = draw_class(cdf, target.uniform(i));
    for (std::int64_t j = 0; j < c; ++j) s.logits[r * c + j] = noise.normal(i * c + j) + (j == t[r] ? sep : 0.0);
  }
  out.input = class_output(s, p.at("output"), {n, c}, {n}, float_type(d.dtype));
  out.target = long_tensor(t, {n});
}

std::int64_t elements(const nlohmann::json& p) { return size_param(p, "num_classes", 2) + 1; }

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

DataGenerator multiclass() {
  using namespace DISTMETRICS_UNITY_ID;
  DataGenerator g;
  g.name = "multiclass";
  g.description =
      "multiclass classification: input [N, C] logits or probabilities (float) or [N] labels (int64); target [N] int64 in "
      "[0, C)";
  g.params = with_common({num_classes(),
                          param("output", "string", "what input holds", "logits", {"logits", "probabilities", "labels"}),
                          class_weights("relative frequency of each class (imbalance); empty: balanced"), separation(1.5)});
  g.produces = {{"input", "[N, C] or [N]", "float (data.dtype) or int64 (output = labels)",
                 "`[N, C]` logits or probabilities, or `[N]` labels"},
                {"target", "[N]", "int64", "`[N]` int64 in [0, C)"}};
  g.class_count = "num_classes";
  g.elements_per_sample = elements;
  g.make = make;
  g.check = check_class_weights;
  return g;
}

}  // namespace distmetrics::harness::generators
