// fairness: binary predictions against labels, each sample in a group. The batch holds three
// numbers a sample in its two tensors, as `retrieval` does: input [N] the prediction, target
// [N, 2] int64 (column 0 the label, column 1 the group id), so that every shard policy, batch
// size, placement and input dtype applies by row; a Python row splits the target into the
// library's `target` and `groups` (peers' fairness update, docs/scenarios.md).
#include <cmath>

#include "making.h"

namespace distmetrics::harness::generators {
namespace {
namespace DISTMETRICS_UNITY_ID {

void make(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream), group(d.seed, kQueryStream);
  const std::int64_t groups = p.at("groups");
  const auto cdf = class_cdf(p.at("group_weights"), groups);
  const double rate = p.at("positive_rate"), shift = p.at("group_shift"), sep = p.at("separation");
  const std::string output = p.at("output");
  const std::int64_t n = count_of(rows);
  std::vector<std::int64_t> t(2 * n);
  std::vector<double> logits(n);
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = rows[r];
    const std::int64_t g = draw_class(cdf, group.uniform(i));
    // Group g's positive rate: positive_rate + g * group_shift, clamped to [0, 1].
    const double group_rate = std::min(1.0, std::max(0.0, rate + static_cast<double>(g) * shift));
    t[2 * r] = target.uniform(i) < group_rate ? 1 : 0;
    t[2 * r + 1] = g;
    logits[r] = sep * (t[2 * r] ? 1.0 : -1.0) / 2.0 + noise.normal(i);
  }
  out.input = elementwise_output(logits, output, {n}, float_type(d.dtype));
  out.target = long_tensor(t, {n, 2});
}

void check(const std::string& owner, const nlohmann::json& p) {
  const auto& w = p.at("group_weights");
  if (w.empty()) return;
  if (static_cast<std::int64_t>(w.size()) != p.at("groups").get<std::int64_t>())
    throw runtime::FieldError("group_weights", owner + ": group_weights has " + std::to_string(w.size()) +
                                                   " entries but groups is " + p.at("groups").dump());
  double total = 0;
  for (const auto& x : w) {
    if (!(x.get<double>() >= 0 && std::isfinite(x.get<double>())))
      throw runtime::FieldError("group_weights", owner + ": group_weights must be finite and >= 0, got " + x.dump());
    total += x.get<double>();
  }
  if (!(total > 0)) throw runtime::FieldError("group_weights", owner + ": group_weights must not all be 0");
}

std::int64_t elements(const nlohmann::json&) { return 4; }

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

DataGenerator fairness() {
  using namespace DISTMETRICS_UNITY_ID;
  DataGenerator g;
  g.name = "fairness";
  g.description =
      "fairness: input [N] binary predictions (probabilities, logits or 0/1 labels); target [N, 2] int64, column 0 the "
      "label 0/1, column 1 the group id in [0, groups)";
  g.params = with_common(
      {drawn(ranged(param("groups", "int", "number of groups G", 3), 1, 1000), {1, 2, 5}),
       param("group_weights", "float_list", "relative frequency of each group (a rare group: a rank without it); empty: "
             "balanced", nlohmann::json::array()),
       param("output", "string", "what input holds", "probabilities", {"probabilities", "logits", "labels"}),
       drawn(ranged(param("positive_rate", "float", "fraction of positive labels in group 0", 0.3), 0, 1), {0.0, 0.5, 1.0}),
       drawn(ranged(param("group_shift", "float", "how much each next group's positive rate grows", 0.15), -1, 1),
             {0.0, 0.3, -0.2}),
       drawn(ranged(param("separation", "float", "how far positives' logits sit above negatives'", 1.5), -1e6, 1e6),
             {0.0, 0.5, 5.0})});
  g.produces = {{"input", "[N]", "float (data.dtype) or int64 (output = labels)",
                 "`[N]` predictions: probabilities, logits or labels 0/1"},
                {"target", "[N, 2]", "int64", "`[N, 2]` int64: label 0/1, group id"}};
  g.elements_per_sample = elements;
  g.make = make;
  g.check = check;
  return g;
}

}  // namespace distmetrics::harness::generators
