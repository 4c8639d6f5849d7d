// token_logits: language-model outputs, one sequence of T tokens a sample. input [N, T, V] the
// logits (or their softmax) over a vocabulary of V, target [N, T] int64 the next token, with a
// fraction of positions set to the ignore index (padding): what Perplexity-style classes take.
// A sample is one row, so every shard policy, batch size and placement applies as to the others;
// `padded_rate` makes whole sequences padding (a batch, or a rank, may hold no counted token).
#include "making.h"

namespace distmetrics::harness::generators {
namespace {
namespace DISTMETRICS_UNITY_ID {

void make(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::int64_t v = p.at("vocab"), t_len = p.at("seq_len"), ignore = p.at("ignore_index");
  const double sep = p.at("separation"), ignore_rate = p.at("ignore_rate"), padded_rate = p.at("padded_rate");
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream), pad(d.seed, kOutlierStream);
  const std::int64_t n = count_of(rows);
  std::vector<std::int64_t> t(n * t_len);
  Scores s{std::vector<double>(n * t_len * v), n * t_len, v};
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = rows[r];
    // A padded sequence: every position ignored (stream draw t_len, past the positions' own).
    const bool padded = pad.uniform(i * (t_len + 1) + t_len) < padded_rate;
    for (std::int64_t j = 0; j < t_len; ++j) {
      const std::int64_t at = i * t_len + j, row = r * t_len + j;
      const std::int64_t token = static_cast<std::int64_t>(target.uniform(at) * static_cast<double>(v)) % v;
      for (std::int64_t k = 0; k < v; ++k) s.logits[row * v + k] = noise.normal(at * v + k) + (k == token ? sep : 0.0);
      t[row] = padded || pad.uniform(i * (t_len + 1) + j) < ignore_rate ? ignore : token;
    }
  }
  out.input = class_output(s, p.at("output"), {n, t_len, v}, {n, t_len}, float_type(d.dtype));
  out.target = long_tensor(t, {n, t_len});
}

void check(const std::string& owner, const nlohmann::json& p) {
  const std::int64_t v = p.at("vocab"), ignore = p.at("ignore_index");
  if (ignore >= 0 && ignore < v)
    throw runtime::FieldError("ignore_index", owner + ": ignore_index " + std::to_string(ignore) +
                                                  " is a token of the vocabulary [0, " + std::to_string(v) +
                                                  "): padding would be indistinguishable from a real token; use a "
                                                  "negative index or one >= vocab");
}

std::int64_t elements(const nlohmann::json& p) {
  return size_param(p, "seq_len", 4) * (size_param(p, "vocab", 5) + 1);
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

DataGenerator token_logits() {
  using namespace DISTMETRICS_UNITY_ID;
  DataGenerator g;
  g.name = "token_logits";
  g.description =
      "token logits: input [N, T, V] logits or probabilities over a vocabulary of V (float); target [N, T] int64 tokens "
      "in [0, V), some positions the ignore index";
  g.params = with_common(
      {drawn(ranged(param("vocab", "int", "vocabulary size V", 5), 2, 100000), {2, 7, 50}),
       drawn(ranged(param("seq_len", "int", "tokens a sequence T", 4), 1, 4096), {1, 3, 16}),
       param("ignore_index", "int", "the target of an ignored (padding) position; outside [0, V)", -100),
       drawn(ranged(param("ignore_rate", "float", "fraction of positions that are padding", 0.2), 0, 1), {0.0, 0.5, 1.0}),
       drawn(ranged(param("padded_rate", "float", "fraction of sequences that are padding throughout", 0.1), 0, 1),
             {0.0, 0.5}),
       param("output", "string", "what input holds", "logits", {"logits", "probabilities"}), separation(1.5)});
  g.produces = {{"input", "[N, T, V]", "float (data.dtype)", "`[N, T, V]` logits or probabilities"},
                {"target", "[N, T]", "int64", "`[N, T]` int64 tokens in [0, V), or ignore_index"}};
  g.elements_per_sample = elements;
  g.make = make;
  g.check = check;
  return g;
}

}  // namespace distmetrics::harness::generators
