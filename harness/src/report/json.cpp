// The JSON view: the JSON report of docs/cli-contract.md (docs/report.schema.json), written from
// the report model. Each variant is its verdict as Verdict::to_json writes it; conform's matrix
// adds the columns, the cells and each variant's metric and source.
#include "distmetrics/harness/report_model.h"

namespace distmetrics::harness {

nlohmann::json render_json(const ReportModel& model) {
  using nlohmann::json;
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
