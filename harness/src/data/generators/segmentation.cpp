// segmentation: a class per pixel.
#include "making.h"

namespace distmetrics::harness::generators {
namespace {
namespace DISTMETRICS_UNITY_ID {

void make(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::int64_t c = p.at("num_classes"), h = p.at("height"), w = p.at("width"), hw = h * w;
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream);
  const auto cdf = class_cdf(p.at("class_weights"), c);
  const double sep = p.at("separation");
  const std::int64_t n = count_of(rows);
  std::vector<std::int64_t> t(n * hw);
  // Pixel-major scores (sample, pixel, class), transposed to [N, C, H, W] below.
  Scores s{std::vector<double>(n * hw * c), n * hw, c};
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t q = 0; q < hw; ++q) {
      const std::int64_t k = rows[r] * hw + q, at = r * hw + q;
      t[at] = draw_class(cdf, target.uniform(k));
      for (std::int64_t j = 0; j < c; ++j) s.logits[at * c + j] = noise.normal(k * c + j) + (j == t[at] ? sep : 0.0);
    }
  }
  const std::string output = p.at("output");
  auto input = class_output(s, output, {n, h, w, c}, {n, h, w}, float_type(d.dtype));
  out.input = output == "labels" ? input : input.permute({0, 3, 1, 2}).contiguous();
  out.target = long_tensor(t, {n, h, w});
}

std::int64_t elements(const nlohmann::json& p) {
  return (size_param(p, "num_classes", 2) + 1) * size_param(p, "height", 8) * size_param(p, "width", 8);
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

DataGenerator segmentation() {
  using namespace DISTMETRICS_UNITY_ID;
  DataGenerator g;
  g.name = "segmentation";
  g.description =
      "segmentation masks: input [N, C, H, W] logits or probabilities (float) or [N, H, W] labels (int64); target [N, H, W] "
      "int64 in [0, C)";
  g.params = with_common({num_classes(),
                          drawn(ranged(param("height", "int", "mask height", 8), 1, 256), {1, 2, 3, 4, 5, 6, 7, 8}),
                          drawn(ranged(param("width", "int", "mask width", 8), 1, 256), {1, 2, 3, 4, 5, 6, 7, 8}),
                          param("output", "string", "what input holds", "logits", {"logits", "probabilities", "labels"}),
                          class_weights("relative frequency of each class"), separation(1.5)});
  g.produces = {{"input", "[N, C, H, W] or [N, H, W]", "float (data.dtype) or int64 (output = labels)",
                 "`[N, C, H, W]` logits or probabilities, or `[N, H, W]` labels"},
                {"target", "[N, H, W]", "int64", "`[N, H, W]` int64"}};
  g.class_count = "num_classes";
  g.elements_per_sample = elements;
  g.make = make;
  g.check = check_class_weights;
  return g;
}

}  // namespace distmetrics::harness::generators
