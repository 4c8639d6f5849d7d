// images: targets in [0, data_range], and inputs off by clipped noise.
#include "making.h"

namespace distmetrics::harness::generators {
namespace {
namespace DISTMETRICS_UNITY_ID {

void make(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::int64_t c = p.at("channels"), h = p.at("height"), w = p.at("width"), per = c * h * w;
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream);
  const double range = p.at("data_range"), err = p.at("noise");
  const std::int64_t n = count_of(rows);
  std::vector<double> y(n * per), yhat(n * per);
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t j = 0; j < per; ++j) {
      const std::int64_t k = rows[r] * per + j, at = r * per + j;
      y[at] = range * target.uniform(k);
      yhat[at] = std::clamp(y[at] + err * range * noise.normal(k), 0.0, range);
    }
  }
  out.input = float_tensor(yhat, {n, c, h, w}, float_type(d.dtype));
  out.target = float_tensor(y, {n, c, h, w}, float_type(d.dtype));
}

std::int64_t elements(const nlohmann::json& p) {
  return 2 * size_param(p, "channels", 3) * size_param(p, "height", 8) * size_param(p, "width", 8);
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

DataGenerator images() {
  using namespace DISTMETRICS_UNITY_ID;
  DataGenerator g;
  g.name = "images";
  g.description = "images: input and target [N, C, H, W] float in [0, data_range]; input = target plus clipped noise";
  g.params = with_common(
      {drawn(ranged(param("channels", "int", "channels C", 3), 1, 16), {1, 2, 3}),
       drawn(ranged(param("height", "int", "image height", 8), 1, 256), {1, 2, 3, 4, 5, 6, 7, 8}),
       drawn(ranged(param("width", "int", "image width", 8), 1, 256), {1, 2, 3, 4, 5, 6, 7, 8}),
       ranged(param("data_range", "float", "largest pixel value", 1.0), 1e-12, 1e12),
       drawn(ranged(param("noise", "float", "noise standard deviation, as a fraction of data_range", 0.1), 0, 1e6),
             {0.0, 1e-7, 0.5, 1e3, 1e6})});
  g.produces = {{"input", "[N, C, H, W]", "float (data.dtype)", "`[N, C, H, W]` in [0, data_range]"},
                {"target", "[N, C, H, W]", "float (data.dtype)", "same"}};
  g.elements_per_sample = elements;
  g.make = make;
  return g;
}

}  // namespace distmetrics::harness::generators
