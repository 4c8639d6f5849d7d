// waveforms: audio signals, one sample a set of S sources of T time steps. target [N, S, T] the
// clean sources (each a sum of three sinusoids of its own frequencies and phases), input
// [N, S, T] an estimate: the sources times a gain, plus noise, and with `permuted` the sources in
// another order in every sample (a non-identity rotation: what permutation-invariant training
// must undo). One sample is one row, so shard policies, batch sizes and placements apply as to
// the others; `sources = 1` is a mono signal ([N, 1, T]: audio metrics take [..., time]).
#include <cmath>

#include "making.h"

namespace distmetrics::harness::generators {
namespace {
namespace DISTMETRICS_UNITY_ID {

constexpr double kPi = 3.14159265358979323846;
constexpr std::int64_t kComponents = 3;

void make(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::int64_t s_count = p.at("sources"), t_len = p.at("length");
  const double gain = p.at("gain"), err = p.at("noise");
  const bool permuted = p.at("permuted");
  const CounterRng tone(d.seed, kTargetStream), noise(d.seed, kNoiseStream), order(d.seed, kQueryStream);
  const std::int64_t n = count_of(rows);
  std::vector<double> clean(n * s_count * t_len), estimate(n * s_count * t_len);
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = rows[r];
    // The estimate's source j holds the target's source (j + shift) mod S.
    const std::int64_t shift =
        permuted && s_count > 1 ? 1 + static_cast<std::int64_t>(order.uniform(i) * static_cast<double>(s_count - 1)) : 0;
    for (std::int64_t s = 0; s < s_count; ++s) {
      double* y = &clean[(r * s_count + s) * t_len];
      for (std::int64_t c = 0; c < kComponents; ++c) {
        const std::uint64_t k = 3 * ((i * s_count + s) * kComponents + c);
        const double freq = 0.02 + 0.4 * tone.uniform(k), phase = 2 * kPi * tone.uniform(k + 1),
                     amplitude = 0.2 + tone.uniform(k + 2);
        for (std::int64_t t = 0; t < t_len; ++t) y[t] += amplitude * std::sin(2 * kPi * freq * static_cast<double>(t) + phase);
      }
    }
    for (std::int64_t s = 0; s < s_count; ++s) {
      const double* y = &clean[(r * s_count + (s + shift) % s_count) * t_len];
      double* yhat = &estimate[(r * s_count + s) * t_len];
      for (std::int64_t t = 0; t < t_len; ++t)
        yhat[t] = gain * y[t] + err * noise.normal((i * s_count + s) * t_len + t);
    }
  }
  out.input = float_tensor(estimate, {n, s_count, t_len}, float_type(d.dtype));
  out.target = float_tensor(clean, {n, s_count, t_len}, float_type(d.dtype));
}

void check(const std::string& owner, const nlohmann::json& p) {
  if (p.at("permuted").get<bool>() && p.at("sources").get<std::int64_t>() < 2)
    throw runtime::FieldError("permuted", owner + ": permuted needs sources >= 2 (one source has one order)");
}

std::int64_t elements(const nlohmann::json& p) { return 2 * size_param(p, "sources", 1) * size_param(p, "length", 64); }

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

DataGenerator waveforms() {
  using namespace DISTMETRICS_UNITY_ID;
  DataGenerator g;
  g.name = "waveforms";
  g.description =
      "audio: target [N, S, T] clean sources (sums of sinusoids), input [N, S, T] an estimate: gain * sources + noise, "
      "the sources rotated in every sample with permuted";
  g.params = with_common(
      {drawn(ranged(param("sources", "int", "sources (channels or speakers) a sample S", 1), 1, 64), {1, 2, 3}),
       drawn(ranged(param("length", "int", "time steps a source T", 64), 1, 1 << 20), {1, 16, 256}),
       drawn(ranged(param("noise", "float", "standard deviation of the estimate's added noise", 0.3), 0, 1e6),
             {0.0, 1e-7, 0.3, 10.0}),
       drawn(ranged(param("gain", "float", "the estimate's scale of the sources (scale-invariant metrics ignore it)", 1.0),
                    -1e6, 1e6),
             {1.0, 0.0, 0.5, -2.0}),
       param("permuted", "bool", "the estimate holds the sources in another order in every sample (needs sources >= 2)",
             false)});
  g.produces = {{"input", "[N, S, T]", "float (data.dtype)", "`[N, S, T]` estimated sources"},
                {"target", "[N, S, T]", "float (data.dtype)", "`[N, S, T]` clean sources"}};
  g.elements_per_sample = elements;
  g.make = make;
  g.check = check;
  return g;
}

}  // namespace distmetrics::harness::generators
