// distributions: one probability distribution over D outcomes a sample for each side, what
// divergences (KL, Jensen-Shannon) compare. target [N, D] the reference distribution q, input
// [N, D] p: q's logits moved by `divergence` times noise, then normalised. `zeros` sets a fraction
// of q's entries to exactly 0 (log 0 and 0 log 0, which a divergence must handle), the rows
// renormalised. Either side may be given as probabilities, logits or log-probabilities.
#include <cmath>

#include "making.h"

namespace distmetrics::harness::generators {
namespace {
namespace DISTMETRICS_UNITY_ID {

void make(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::int64_t k = p.at("dims");
  const double peak = p.at("concentration"), moved = p.at("divergence"), zeros = p.at("zeros");
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream), zero(d.seed, kOutlierStream);
  const std::int64_t n = count_of(rows);
  Scores q{std::vector<double>(n * k), n, k}, pr{std::vector<double>(n * k), n, k};
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = rows[r];
    for (std::int64_t j = 0; j < k; ++j) {
      q.logits[r * k + j] = peak * target.normal(i * k + j);
      pr.logits[r * k + j] = q.logits[r * k + j] + moved * noise.normal(i * k + j);
    }
    // Exact zeros in q (never all of a row: outcome 0 keeps its mass): a -inf logit.
    for (std::int64_t j = 1; j < k; ++j)
      if (zero.uniform(i * k + j) < zeros) q.logits[r * k + j] = -INFINITY;
  }
  out.input = class_output(pr, p.at("output"), {n, k}, {n}, float_type(d.dtype));
  out.target = class_output(q, p.at("target_output"), {n, k}, {n}, float_type(d.dtype));
}

void check(const std::string& owner, const nlohmann::json& p) {
  if (p.at("zeros").get<double>() > 0 && p.at("target_output").get<std::string>() == "logits")
    throw runtime::FieldError("zeros", owner + ": zeros > 0 needs target_output probabilities or log_probabilities "
                                              "(a zero probability has no finite logit)");
}

std::int64_t elements(const nlohmann::json& p) { return 2 * size_param(p, "dims", 3); }

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

DataGenerator distributions() {
  using namespace DISTMETRICS_UNITY_ID;
  DataGenerator g;
  g.name = "distributions";
  g.description =
      "distributions: input [N, D] a distribution p per sample, target [N, D] the distribution q it is compared with "
      "(probabilities, logits or log-probabilities), some of q's entries exactly 0 with zeros";
  g.params = with_common(
      {drawn(ranged(param("dims", "int", "outcomes a distribution D", 3), 1, 100000), {1, 2, 5, 100}),
       drawn(ranged(param("concentration", "float", "spread of q's logits (larger: more peaked)", 1.0), 0, 1e6),
             {0.0, 1.0, 30.0}),
       drawn(ranged(param("divergence", "float", "how far p's logits move from q's", 0.5), 0, 1e6), {0.0, 0.5, 5.0}),
       drawn(ranged(param("zeros", "float", "fraction of q's entries (past the first) that are exactly 0", 0.0), 0, 1),
             {0.0, 0.3}),
       param("output", "string", "what input holds", "probabilities", {"probabilities", "logits", "log_probabilities"}),
       param("target_output", "string", "what target holds", "probabilities",
             {"probabilities", "logits", "log_probabilities"})});
  g.produces = {{"input", "[N, D]", "float (data.dtype)", "`[N, D]` distributions p"},
                {"target", "[N, D]", "float (data.dtype)", "`[N, D]` distributions q"}};
  g.elements_per_sample = elements;
  g.make = make;
  g.check = check;
  return g;
}

}  // namespace distmetrics::harness::generators
