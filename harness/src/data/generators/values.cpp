// values: numbers without a target, such as per-sample losses.
#include <cmath>

#include "making.h"

namespace distmetrics::harness::generators {
namespace {
namespace DISTMETRICS_UNITY_ID {

void make(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::int64_t dims = p.at("dims"), per = std::max<std::int64_t>(dims, 1);
  const CounterRng draw(d.seed, kTargetStream);
  const std::string dist = p.at("distribution");
  const double low = p.at("low"), high = p.at("high"), mean = p.at("mean"), scale = p.at("scale");
  const std::int64_t n = count_of(rows);
  std::vector<double> v(n * per);
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t j = 0; j < per; ++j) {
      const std::int64_t k = rows[r] * per + j, at = r * per + j;
      if (dist == "uniform") v[at] = low + (high - low) * draw.uniform(k);
      else if (dist == "normal") v[at] = mean + scale * draw.normal(k);
      else if (dist == "exponential") v[at] = -scale * std::log(draw.uniform(k));
      else {
        const double lo = std::ceil(low), span = std::floor(high) - lo + 1;
        v[at] = lo + static_cast<double>(draw.below(k, static_cast<std::uint64_t>(std::max(span, 1.0))));
      }
    }
  }
  out.input = float_tensor(v, row_shape(n, dims), float_type(d.dtype));
}

void check(const std::string& owner, const nlohmann::json& p) {
  const auto& dist = p.at("distribution").get_ref<const std::string&>();
  if ((dist == "uniform" || dist == "integers") && !(p.at("high").get<double>() >= p.at("low").get<double>()))
    throw runtime::FieldError("high", owner + ": high (" + p.at("high").dump() + ") must be >= low (" + p.at("low").dump() + ")");
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

DataGenerator values() {
  using namespace DISTMETRICS_UNITY_ID;
  DataGenerator g;
  g.name = "values";
  g.description = "values such as per-sample losses: input [N] (dims = 0) or [N, dims] float, no target";
  g.params = with_common(
      {param("distribution", "string", "how values are drawn", "uniform", {"uniform", "normal", "exponential", "integers"}),
       drawn(param("low", "float", "uniform/integers: smallest value", 0.0), magnitudes(), true),
       drawn(param("high", "float", "uniform/integers: largest value", 1.0), magnitudes()),
       drawn(param("mean", "float", "normal: mean", 0.0), magnitudes(), true),
       ranged(param("scale", "float", "normal: standard deviation; exponential: mean", 1.0), 0, 1e12),
       drawn(ranged(param("dims", "int", "values per sample; 0 gives shape [N]", 0), 0, 64), {0, 1, 2, 3})});
  g.produces = {{"input", "[N] or [N, dims]", "float (data.dtype)", "`[N]` or `[N, dims]` values (e.g. per-sample losses)"}};
  g.make = make;
  g.check = check;
  return g;
}

}  // namespace distmetrics::harness::generators
