// Running the property checkers (check.h); each property's checker is in its own file
// (harness/src/properties/), what they share in properties/checking.cpp.
#include "distmetrics/harness/check.h"

#include <cmath>

#include "../properties/checking.h"
#include "distmetrics/harness/property.h"

namespace distmetrics::harness {

Comparison compare_results(const ComputeResult& expected, const ComputeResult& actual, const Tolerance& tolerance) {
  Comparison c;
  if (expected.raised() || actual.raised()) {
    c.equal = expected.raised() && actual.raised() && expected.error_type == actual.error_type;
    c.difference = c.equal ? 0.0 : INFINITY;
    if (!c.equal) c.detail = actual.text() + " vs expected " + expected.text();
    return c;
  }
  if (!expected.value || !actual.value) {
    c.equal = !expected.value && !actual.value;
    c.difference = c.equal ? 0.0 : INFINITY;
    if (!c.equal) c.detail = "one result has no value";
    return c;
  }
  return compare_values(*expected.value, *actual.value, tolerance);
}

std::vector<RankComparison> compare_at_compute(const std::vector<RankObservation>& ranks, int k,
                                               const ExpectedFor& expected_for, const Tolerance& tolerance,
                                               const ActualOf& actual_of) {
  std::vector<RankComparison> lines(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    RankComparison& line = lines[r];
    line.rank = static_cast<int>(r);
    line.expected = expected_for(line.rank, k);
    line.record = ranks[r].compute(k);
    if (!line.record) continue;
    line.actual = actual_of ? actual_of(*line.record) : &line.record->result;
    if (line.compared()) line.comparison = compare_results(*line.expected, *line.actual, tolerance);
  }
  return lines;
}

std::vector<PropertyResult> check_properties(const CheckContext& ctx) {
  std::vector<PropertyResult> results;
  for (const auto& property : property_table()) {
    if (!property.check || !ctx.scenario.checks(property.name)) continue;
    results.push_back(property.check(ctx, property.hint));
  }
  for (auto& result : results) {
    if (!ctx.scenario.expects_failure_of(result.name)) continue;
    const std::string why = ctx.scenario.expect.reason;
    if (result.outcome == Outcome::Fail) {
      result.outcome = Outcome::Pass;
      result.expected_failure = true;
      result.message = result.name + " failed, as the scenario expects (" + why + "):\n" + result.message;
    } else if (result.outcome == Outcome::Pass) {
      result.outcome = Outcome::Fail;
      result.message = result.name + " was expected to fail (" + why + ") but held: " + result.message + "\n";
      result.variant_lines = checking::variant_lines(ctx);
    }
  }
  return results;
}

namespace {

// A compute's collectives in the reference's JSON: null when not recorded, else {op, dtype, shape} each.
nlohmann::json collectives_to_json(const std::optional<std::vector<TraceEntry>>& collectives) {
  if (!collectives) return nullptr;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : *collectives) out.push_back({{"seq", c.seq}, {"op", c.op}, {"dtype", c.dtype}, {"shape", c.shape}});
  return out;
}

std::optional<std::vector<TraceEntry>> collectives_from_json(const nlohmann::json& j) {
  if (j.is_null()) return std::nullopt;
  std::vector<TraceEntry> out;
  for (const auto& c : j) {
    TraceEntry entry;
    entry.seq = c.at("seq").get<std::uint64_t>();
    entry.op = c.at("op").get<std::string>();
    entry.dtype = c.at("dtype").get<std::string>();
    entry.shape = c.at("shape").get<std::vector<std::int64_t>>();
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace

nlohmann::json reference_to_json(const SingleProcessReference& reference) {
  nlohmann::json at_compute = nlohmann::json::array();
  for (const auto& r : reference.at_compute) at_compute.push_back(r.to_json());
  nlohmann::json other = nlohmann::json::array();
  for (const auto& [size, r] : reference.other_batch_sizes) other.push_back({{"batch_size", size}, {"result", r.to_json()}});
  nlohmann::json collectives = nlohmann::json::array();
  for (const auto& c : reference.collectives_at_compute) collectives.push_back(collectives_to_json(c));
  return {{"at_compute", at_compute}, {"full", reference.full.to_json()}, {"other_batch_sizes", other},
          {"failure", reference.failure}, {"failure_past_deadline", reference.failure_past_deadline},
          {"collectives_at_compute", collectives}};
}

SingleProcessReference reference_from_json(const nlohmann::json& j) {
  SingleProcessReference reference;
  for (const auto& r : j.at("at_compute")) reference.at_compute.push_back(ComputeResult::from_json(r));
  reference.full = ComputeResult::from_json(j.at("full"));
  for (const auto& o : j.at("other_batch_sizes"))
    reference.other_batch_sizes.emplace_back(o.at("batch_size").get<std::int64_t>(), ComputeResult::from_json(o.at("result")));
  reference.failure = j.at("failure").get<std::string>();
  reference.failure_past_deadline = j.value("failure_past_deadline", false);
  if (j.contains("collectives_at_compute"))
    for (const auto& c : j.at("collectives_at_compute")) reference.collectives_at_compute.push_back(collectives_from_json(c));
  return reference;
}

}  // namespace distmetrics::harness
