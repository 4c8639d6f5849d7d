#include "distmetrics/harness/verdict.h"
#include "distmetrics/runtime/text.h"

#include <cmath>

namespace distmetrics::harness {

namespace {

nlohmann::json value_json(const std::optional<ComputeResult>& r) {
  return r && r->value && !r->raised() ? *r->value : nlohmann::json(nullptr);
}

// Each line of `text` indented by four spaces.
std::string indented(const std::string& text) {
  std::string out;
  bool at_start = true;
  for (char c : text) {
    if (at_start && c != '\n') out += "    ";
    out += c;
    at_start = c == '\n';
  }
  return out;
}

}  // namespace

std::string RankLine::first_line() const { return runtime::first_line(text); }

std::string PropertyResult::headline() const { return runtime::first_line(message); }

std::string PropertyResult::full_message() const {
  std::string text = message + variant_lines;
  if (!shard_line.empty()) text += (text.empty() || text.back() == '\n' ? "" : "\n") + shard_line;
  return text;
}

std::string PropertyResult::shown_message() const {
  std::string text = message;
  if (!text.empty() && text.back() != '\n') text += "\n";
  if (!shard_line.empty()) text += shard_line + "\n";
  return text;
}

const char* to_string(SkipWhy why) {
  switch (why) {
    case SkipWhy::NotApplicable: return "not_applicable";
    case SkipWhy::NotJudged: return "not_judged";
  }
  return "?";
}

const std::vector<std::pair<SkipWhy, const char*>>& skip_whys() {
  static const std::vector<std::pair<SkipWhy, const char*>> table = {
      {SkipWhy::NotApplicable, "it does not apply to this metric (a declared convention, a state it cannot save or merge, "
                               "nothing to compare with)"},
      {SkipWhy::NotJudged, "it applies, but the step that judges it was never reached or its evidence is missing"},
  };
  return table;
}

void PropertyResult::set_not_judged(const std::string& reason) {
  outcome = Outcome::Skip;
  why = SkipWhy::NotJudged;
  message = name + ": not judged: " + reason;
}

nlohmann::json PropertyResult::to_json() const {
  nlohmann::json shown = nlohmann::json::array();
  for (const auto& v : values) shown.push_back(value_json(v));
  nlohmann::json j = {{"name", name},         {"outcome", to_string(outcome)}, {"message", full_message()},
                      {"single", value_json(single)}, {"ranks", shown}, {"expected_failure", expected_failure}};
  j["consequence_of"] = consequence_of.empty() ? nlohmann::json(nullptr) : nlohmann::json(consequence_of);
  j["difference"] = difference && std::isfinite(*difference) ? nlohmann::json(*difference) : nlohmann::json(nullptr);
  if (!judged_before_death.empty()) j["judged_before_death"] = judged_before_death;
  if (outcome == Outcome::Skip) j["why"] = to_string(why);
  return j;
}

std::string Verdict::details() const {
  std::string out;
  if (outcome == Outcome::Fail) {
    for (const auto& p : properties)
      if (p.outcome == Outcome::Fail) out += p.shown_message();
    return out;
  }
  out = reason + "\n";
  std::string rest = diagnosis;
  const std::string opening = runtime::first_line(diagnosis);
  if (!opening.empty() && reason.find(opening) != std::string::npos)
    rest = diagnosis.find('\n') == std::string::npos ? "" : diagnosis.substr(diagnosis.find('\n') + 1);
  if (!rest.empty()) out += rest + "\n";
  return out + kept_verdicts_text();
}

std::string Verdict::kept_verdicts_text() const {
  std::string held, failed, not_judged;
  for (const auto& p : properties) {
    if (p.judged_before_death.empty()) continue;
    if (p.outcome == Outcome::Pass) held += "  " + p.name + " held (" + p.judged_before_death + ")\n";
    else if (p.outcome == Outcome::Fail) failed += "  " + p.name + " failed (" + p.judged_before_death + "):\n" + indented(p.shown_message());
    else not_judged += "  " + p.headline() + "\n";
  }
  if (held.empty() && failed.empty() && not_judged.empty()) return "";
  return "judged before the variant died (the steps every rank completed):\n" + failed + held + not_judged;
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
          {"state", runtime::to_string(state)},
          {"samples", optional(samples)},
          {"batches", optional(batches)},
          {"trace", collectives},
          {"blocked_in", optional(blocked_in)},
          {"error", error.empty() ? nlohmann::json(nullptr) : nlohmann::json(error)}};
}

nlohmann::json RootCause::to_json() const {
  return {{"property", property}, {"headline", headline}, {"evidence", evidence}, {"hint", hint},
          {"consequences", consequences}};
}

namespace {

nlohmann::json deviation_json(const Deviation& d) {
  return {{"script_step", d.script_step},
          {"compute", d.compute ? nlohmann::json(*d.compute) : nlohmann::json(nullptr)},
          {"seq", d.seq},
          {"op", d.op},
          {"more", d.more},
          {"fewer", d.fewer},
          {"blamed", d.blamed}};
}

}  // namespace

nlohmann::json Verdict::to_json() const {
  nlohmann::json props = nlohmann::json::array();
  for (const auto& p : properties) props.push_back(p.to_json());
  nlohmann::json rank_reports = nlohmann::json::array();
  nlohmann::json shard_sizes = nlohmann::json::array();
  for (const auto& s : shards) shard_sizes.push_back({{"rank", s.rank}, {"samples", s.samples}, {"batches", s.batches}});
  nlohmann::json tolerance_json;
  if (tolerance) tolerance_json = {{"rtol", tolerance->rtol}, {"atol", tolerance->atol}, {"exact", tolerance->exact}};
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
          {"root_cause", root_cause ? root_cause->to_json() : nlohmann::json(nullptr)},
          {"shards", shard_sizes},
          {"reproduce", variant.reproduce()},
          {"tolerance", tolerance_json},
          {"ranks", rank_reports}};
  if (deviation) j["deviation"] = deviation_json(*deviation);
  j["phases"] = phases;
  return j;
}

}  // namespace distmetrics::harness
