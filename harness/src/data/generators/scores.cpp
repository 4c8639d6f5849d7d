// scores: ranking scores against relevance 0/1.
#include <cmath>

#include "making.h"

namespace distmetrics::harness::generators {
namespace {
namespace DISTMETRICS_UNITY_ID {

void make(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream);
  const double rate = p.at("positive_rate"), sep = p.at("separation");
  const bool probabilities = p.at("output") == "probabilities", ties = p.at("ties");
  const std::int64_t n = count_of(rows);
  std::vector<std::int64_t> t(n);
  std::vector<double> s(n);
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = rows[r];
    t[r] = target.uniform(i) < rate ? 1 : 0;
    s[r] = sep * t[r] + noise.normal(i);
    if (probabilities) s[r] = sigmoid(s[r]);
    if (ties) s[r] = std::round(s[r] * (probabilities ? 10.0 : 2.0)) / (probabilities ? 10.0 : 2.0);
  }
  out.input = float_tensor(s, {n}, float_type(d.dtype));
  out.target = long_tensor(t, {n});
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

DataGenerator scores() {
  using namespace DISTMETRICS_UNITY_ID;
  DataGenerator g;
  g.name = "scores";
  g.description =
      "ranking scores: input [N] float scores (or probabilities), target [N] int64 relevance 0/1; positives score higher on "
      "average";
  g.params = with_common(
      {param("output", "string", "what input holds", "scores", {"scores", "probabilities"}),
       drawn(ranged(param("positive_rate", "float", "fraction of relevant samples", 0.3), 0, 1), {0.0, 1.0, 0.5, 0.05, 0.95}),
       drawn(ranged(param("separation", "float", "mean score gap between positives and negatives", 1.0), -1e6, 1e6),
             {0.0, 0.5, 1.5, 5.0}),
       param("ties", "bool", "round scores to a coarse grid so that many tie", false)});
  g.produces = {{"input", "[N]", "float (data.dtype)", "`[N]` scores (or probabilities)"},
                {"target", "[N]", "int64", "`[N]` int64 relevance 0/1"}};
  g.make = make;
  return g;
}

}  // namespace distmetrics::harness::generators
