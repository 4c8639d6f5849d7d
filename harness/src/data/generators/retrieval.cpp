// retrieval: per document a score, its relevance to its query and the query's id. The batch
// holds three numbers a sample in its two tensors: input [N] the scores, target [N, 2] int64
// (column 0 the relevance, column 1 the query id), so that every shard policy, batch size,
// placement and input dtype applies by row as to the other generators; a Python row splits the
// target into the library's `target` and `indexes` (peers' retrieval update, docs/scenarios.md).
#include <cmath>

#include "making.h"

namespace distmetrics::harness::generators {
namespace {
namespace DISTMETRICS_UNITY_ID {

// Sample i's query: interleaved (i mod Q: consecutive documents belong to different queries, so
// every query spans every contiguous shard), blocks (`block` consecutive documents a query: with
// a block longer than a shard a rank holds no whole query) or random (uniform in [0, Q)).
std::int64_t query_of(const DataSpec& d, const CounterRng& query, std::int64_t i) {
  const auto& p = d.params;
  const std::string layout = p.at("layout");
  const std::int64_t q = p.at("queries");
  if (layout == "interleaved") return i % q;
  if (layout == "blocks") return i / p.at("block").get<std::int64_t>();
  return static_cast<std::int64_t>(query.below(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(q)));
}

void make(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream), query(d.seed, kQueryStream),
      grade(d.seed, kGradeStream);
  const double rate = p.at("positive_rate"), sep = p.at("separation");
  const bool graded = p.at("relevance") == "graded", ties = p.at("ties"), probabilities = p.at("output") == "probabilities";
  const std::int64_t max_grade = p.at("max_relevance"), empty = p.at("empty_queries");
  const std::int64_t n = count_of(rows);
  std::vector<std::int64_t> t(2 * n);
  std::vector<double> s(n);
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = rows[r];
    const std::int64_t q = query_of(d, query, i);
    std::int64_t rel = target.uniform(i) < rate ? 1 : 0;
    if (rel && graded) rel = 1 + static_cast<std::int64_t>(grade.below(i, static_cast<std::uint64_t>(max_grade)));
    if (q < empty) rel = 0;  // the first `empty_queries` queries have no relevant document
    t[2 * r] = rel;
    t[2 * r + 1] = q;
    s[r] = sep * static_cast<double>(rel) + noise.normal(i);
    if (probabilities) s[r] = sigmoid(s[r]);
    if (ties) s[r] = std::round(s[r] * (probabilities ? 10.0 : 2.0)) / (probabilities ? 10.0 : 2.0);
  }
  out.input = float_tensor(s, {n}, float_type(d.dtype));
  out.target = long_tensor(t, {n, 2});
}

std::int64_t elements(const nlohmann::json&) { return 4; }

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

DataGenerator retrieval() {
  using namespace DISTMETRICS_UNITY_ID;
  DataGenerator g;
  g.name = "retrieval";
  g.description =
      "retrieval: input [N] float document scores (or probabilities); target [N, 2] int64, column 0 the relevance (0/1, or graded 0..max), "
      "column 1 the query id; relevant documents score higher on average";
  g.params = with_common(
      {param("output", "string", "what input holds: scores (any sign) or probabilities (their sigmoid, in (0, 1))", "scores",
             {"scores", "probabilities"}),
       drawn(ranged(param("queries", "int", "number of queries Q (layouts interleaved and random)", 4), 1, 1000000),
             {1, 2, 3, 7}),
       param("layout", "string",
             "which query a document belongs to: interleaved (document i to query i mod Q: every query spans every "
             "contiguous shard), blocks (`block` consecutive documents a query) or random",
             "interleaved", {"interleaved", "blocks", "random"}),
       drawn(ranged(param("block", "int", "documents a query in the blocks layout", 8), 1, 1000000), {1, 3, 16}),
       param("relevance", "string", "binary (0/1) or graded (0..max_relevance)", "binary", {"binary", "graded"}),
       drawn(ranged(param("max_relevance", "int", "largest grade of graded relevance", 3), 1, 1000), {1, 2, 5}),
       drawn(ranged(param("positive_rate", "float", "fraction of relevant documents", 0.3), 0, 1), {0.0, 1.0, 0.5, 0.05}),
       drawn(ranged(param("empty_queries", "int", "queries 0..k-1 get no relevant document", 0), 0, 1000000), {0, 1, 2}),
       drawn(ranged(param("separation", "float", "mean score gap per relevance grade", 1.0), -1e6, 1e6), {0.0, 0.5, 5.0}),
       param("ties", "bool", "round scores to a grid of 0.5 (probabilities: 0.1) so that many tie", false)});
  g.produces = {{"input", "[N]", "float (data.dtype)", "`[N]` document scores (or probabilities)"},
                {"target", "[N, 2]", "int64", "`[N, 2]` int64: relevance (0/1 or graded), query id"}};
  g.elements_per_sample = elements;
  g.make = make;
  return g;
}

}  // namespace distmetrics::harness::generators
