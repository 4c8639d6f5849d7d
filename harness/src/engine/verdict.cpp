#include "distmetrics/harness/verdict.h"

#include <cmath>

namespace distmetrics::harness {

nlohmann::json PropertyResult::to_json() const {
  nlohmann::json j = {{"name", name}, {"outcome", to_string(outcome)}, {"message", message},
                      {"single", single}, {"ranks", ranks}, {"expected_failure", expected_failure}};
  j["consequence_of"] = consequence_of.empty() ? nlohmann::json(nullptr) : nlohmann::json(consequence_of);
  j["difference"] = difference && std::isfinite(*difference) ? nlohmann::json(*difference) : nlohmann::json(nullptr);
  return j;
}

const PropertyResult* Verdict::property(const std::string& name) const {
  for (const auto& p : properties)
    if (p.name == name) return &p;
  return nullptr;
}

nlohmann::json RankReport::to_json(bool with_trace) const {
  nlohmann::json collectives = nlohmann::json::array();
  for (const auto& t : with_trace ? trace : std::vector<TraceEntry>{}) {
    collectives.push_back({{"seq", t.seq}, {"op", t.op}, {"dtype", t.dtype}, {"shape", t.shape},
                           {"script_step", t.script_step ? nlohmann::json(t.script_step) : nlohmann::json(nullptr)},
                           {"step", t.step_text.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.step_text)}});
  }
  auto optional = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"rank", rank},
          {"state", state},
          {"samples", optional(samples)},
          {"batches", optional(batches)},
          {"trace", collectives},
          {"blocked_in", optional(blocked_in)},
          {"error", error.empty() ? nlohmann::json(nullptr) : nlohmann::json(error)}};
}

nlohmann::json Verdict::to_json() const {
  nlohmann::json props = nlohmann::json::array();
  for (const auto& p : properties) props.push_back(p.to_json());
  nlohmann::json rank_reports = nlohmann::json::array();
  for (const auto& r : ranks) rank_reports.push_back(r.to_json(outcome != Outcome::Pass));
  nlohmann::json j = {{"id", variant.id},
          {"scenario", variant.scenario},
          {"file", variant.file},
          {"backend", variant.backend},
          {"world_size", variant.world_size},
          {"shard", variant.shard},
          {"placement", variant.placement},
          {"seed", variant.seed},
          {"outcome", to_string(outcome)},
          {"reason", reason},
          {"seconds", seconds},
          {"properties", props},
          {"diagnosis", diagnosis.empty() ? nlohmann::json(nullptr) : nlohmann::json(diagnosis)},
          {"root_cause", root_cause},
          {"shards", shards},
          {"reproduce", variant.reproduce()},
          {"tolerance", tolerance},
          {"ranks", rank_reports}};
  if (!deviation.is_null()) j["deviation"] = deviation;
  return j;
}

}  // namespace distmetrics::harness
