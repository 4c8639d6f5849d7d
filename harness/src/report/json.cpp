// The JSON view: the JSON report of docs/cli-contract.md (docs/report.schema.json), written from
// the report model. Each variant is its verdict as Verdict::to_json writes it; conform's matrix
// adds the columns, the cells and each variant's metric and source.
#include "distmetrics/harness/report_model.h"

namespace distmetrics::harness {

namespace {

// explore's summary: its counts, coverage and findings (docs/explore.md).
nlohmann::json search_json(const SearchSummary& s) {
  using nlohmann::json;
  json findings = json::array();
  for (const auto& f : s.findings)
    findings.push_back({{"signature", f.signature},
                        {"outcome", f.outcome},
                        {"properties", f.properties},
                        {"blame", f.blame},
                        {"case", f.index},
                        {"found_after_seconds", f.found_after},
                        {"original_size", f.original_size},
                        {"shrunk_size", f.shrunk_size},
                        {"shrink_steps", f.shrink_steps},
                        {"shrink_candidates", f.shrink_tried},
                        {"shrink_cut", f.shrink_cut.empty() ? json(nullptr) : json(f.shrink_cut)},
                        {"saved", f.saved.empty() ? json(nullptr) : json(f.saved)},
                        {"scenario", f.toml},
                        {"verdict", f.verdict.to_json()}});
  return {{"metric", s.metric},
          {"seed", s.seed},
          {"budget", s.budget},
          {"seconds", s.seconds},
          {"cases", s.cases},
          {"refused", s.refused},
          {"slow", s.slow},
          {"unjudged", s.unjudged},
          {"shrink_cases", s.shrink_cases},
          {"variants_per_second", s.variants_per_second},
          {"helper_ready_seconds", s.helper_ready_seconds},
          {"first_case_seconds", s.first_case_seconds ? json(*s.first_case_seconds) : json(nullptr)},
          {"coverage", s.coverage},
          {"findings", findings}};
}

}  // namespace

nlohmann::json render_json(const ReportModel& model) {
  using nlohmann::json;
  if (model.search) return search_json(*model.search);
  json summary = json::object();
  for (const auto& kind : outcome_kinds()) summary[kind.name] = model.counts.of(kind.outcome);
  summary["total"] = model.counts.total;
  json variants = json::array();
  for (const auto& v : model.variants) {
    json entry = v.verdict.to_json();
    if (model.by_metric) entry["metric"] = v.row;
    if (!v.source.empty()) entry["source"] = v.source;
    variants.push_back(std::move(entry));
  }
  json report = {{"distmetrics_version", model.distmetrics_version},
                 {"torch_version", model.torch_version},
                 {"started", model.started},
                 {"seconds", model.counts.seconds},
                 {"summary", summary},
                 {"variants", variants}};
  if (model.by_metric) {
    report["properties"] = model.columns;
    json matrix = json::array();
    for (const auto& v : model.variants) {
      json cells = json::object();
      for (const auto& [column, cell] : v.cells) cells[column] = cell.empty() ? json(nullptr) : json(cell);
      matrix.push_back({{"metric", v.row},
                        {"variant", v.id},
                        {"scenario", v.scenario},
                        {"backend", v.backend},
                        {"world_size", v.world_size},
                        {"shard", v.shard},
                        {"placement", v.placement},
                        {"outcome", v.outcome},
                        {"properties", cells}});
    }
    report["matrix"] = matrix;
  }
  for (const auto& [key, value] : model.json_fields.items()) report[key] = value;
  return report;
}

}  // namespace distmetrics::harness
