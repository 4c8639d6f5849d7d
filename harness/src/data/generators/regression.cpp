// regression: targets, and predictions off by noise (some by ten times as much).
#include "making.h"

namespace distmetrics::harness::generators {
namespace {
namespace DISTMETRICS_UNITY_ID {

void make(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::int64_t dims = p.at("dims"), per = std::max<std::int64_t>(dims, 1);
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream), outlier(d.seed, kOutlierStream);
  const double offset = p.at("offset"), scale = p.at("scale"), err = p.at("noise"), outliers = p.at("outliers");
  const std::int64_t n = count_of(rows);
  std::vector<double> y(n * per), yhat(n * per);
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = rows[r];
    const double factor = outlier.uniform(i) < outliers ? 10.0 : 1.0;
    for (std::int64_t j = 0; j < per; ++j) {
      const std::int64_t k = i * per + j, at = r * per + j;
      y[at] = offset + scale * target.normal(k);
      yhat[at] = y[at] + factor * err * noise.normal(k);
    }
  }
  out.input = float_tensor(yhat, row_shape(n, dims), float_type(d.dtype));
  out.target = float_tensor(y, row_shape(n, dims), float_type(d.dtype));
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

DataGenerator regression() {
  using namespace DISTMETRICS_UNITY_ID;
  DataGenerator g;
  g.name = "regression";
  g.description =
      "regression: input (prediction) and target [N] (dims = 0) or [N, dims], float; target = offset + scale * normal, "
      "input = target + noise * normal";
  g.params = with_common(
      {drawn(ranged(param("dims", "int", "features per sample; 0 gives shape [N]", 0), 0, 64), {0, 1, 2, 3}),
       drawn(param("offset", "float", "mean of the target", 0.0), magnitudes(), true),
       ranged(param("scale", "float", "standard deviation of the target", 1.0), 0, 1e12),
       drawn(ranged(param("noise", "float", "standard deviation of the prediction error", 0.5), 0, 1e6),
             {0.0, 1e-7, 0.5, 1e3, 1e6}),
       drawn(ranged(param("outliers", "float", "fraction of samples whose error is ten times larger", 0.0), 0, 1),
             {0.0, 0.1, 0.5})});
  g.produces = {{"input", "[N] or [N, dims]", "float (data.dtype)", "`[N]` or `[N, dims]` float predictions"},
                {"target", "[N] or [N, dims]", "float (data.dtype)", "same shape, float"}};
  g.make = make;
  return g;
}

}  // namespace distmetrics::harness::generators
