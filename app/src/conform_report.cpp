#include "conform_report.h"

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <map>
#include <sstream>

#include "distmetrics/build_config.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/harness/report.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::app::conform_report {
namespace {

using harness::Outcome;
using harness::Verdict;

std::vector<std::string> columns_for(const ConformResult& result, const std::vector<const Verdict*>& verdicts) {
  std::vector<std::string> seen;
  auto see = [&seen](const std::string& name) {
    if (std::find(seen.begin(), seen.end(), name) == seen.end()) seen.push_back(name);
  };
  for (const auto* v : verdicts) {
    for (const auto& p : v->properties) see(p.name);
    const auto it = result.checked.find(v->variant.scenario);
    if (it != result.checked.end())
      for (const auto& name : it->second) see(name);
  }
  // The property table's column order (run's too), then any check the table does not know.
  std::vector<std::string> columns = harness::in_column_order(seen);
  if (columns.empty()) columns.push_back(harness::properties_by_column().front()->name);  // no_hang
  return columns;
}

}  // namespace

std::vector<std::string> matrix_properties(const ConformResult& result) {
  std::vector<const Verdict*> all;
  for (const auto& v : result.verdicts) all.push_back(&v);
  return columns_for(result, all);
}

std::vector<MetricFinding> metric_findings(const ConformResult& result) {
  std::vector<MetricFinding> findings;
  std::map<std::string, std::size_t> at;  // metric -> its entry
  for (std::size_t i = 0; i < result.verdicts.size(); ++i) {
    const auto* p = result.verdicts[i].property("accepts_empty_batch");
    if (!p || p->outcome != Outcome::Fail) continue;
    const std::string& metric = result.metrics[i];
    if (!at.count(metric)) {
      // What the first rank that rejected it raised: "ValueError: ..." (its message's first line).
      std::string error;
      for (const auto& line : p->lines) {
        if (!line.error) continue;
        error = line.error->type + ": " + runtime::first_line(line.error->message);
        break;
      }
      at[metric] = findings.size();
      findings.push_back({metric, "rejects an empty batch", error, {}});
    }
    findings[at[metric]].variants.push_back(result.verdicts[i].variant.id);
  }
  return findings;
}

nlohmann::json findings_json(const std::vector<MetricFinding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : findings)
    out.push_back({{"metric", f.metric}, {"finding", f.finding}, {"error", f.error}, {"variants", f.variants}});
  return out;
}

namespace {

nlohmann::json described(const Plugin& plugin) {
  return {{"path", plugin.path},
          {"name", plugin.name},
          {"version", plugin.version},
          {"interface", plugin.build.interface_version},
          {"torch_version", plugin.build.torch_version},
          {"distmetrics_version", plugin.build.distmetrics_version},
          {"compiler", plugin.build.compiler},
          {"metrics", plugin.metric_names()}};
}

}  // namespace

harness::ReportModel report_model(const ConformResult& result) {
  const auto& plugin = *result.plugin;
  harness::ReportLayout layout;
  layout.by_metric = true;
  layout.metrics = result.metrics;
  layout.columns = matrix_properties(result);
  if (result.plugins.size() > 1)  // several --python sources in one run
    for (const auto* source : result.sources) layout.sources.push_back(source->path);
  harness::ReportModel model = harness::report_model(result.verdicts, result.started, result.seconds, layout);
  model.json_fields["plugin"] = described(plugin);
  if (result.plugins.size() > 1) {
    model.json_fields["plugins"] = nlohmann::json::array();
    for (const auto* p : result.plugins) model.json_fields["plugins"].push_back(described(*p));
  }
  model.json_fields["findings"] = findings_json(metric_findings(result));
  std::string names, paths;
  for (const auto* p : result.plugins.empty() ? std::vector<const Plugin*>{result.plugin} : result.plugins) {
    const auto labelled = result.labels.find(p);
    names += (names.empty() ? "" : ", ") + (labelled != result.labels.end() ? labelled->second : p->name) +
             (p->version.empty() ? "" : " " + p->version);
    paths += (paths.empty() ? "" : ", ") + p->path;
  }
  const std::string shown = result.plugins.size() > 1 ? names : plugin.name;
  model.title = "distmetrics conform: " + (result.plugins.size() > 1 ? names : shown + (plugin.version.empty() ? "" : " " + plugin.version));
  model.last_line_prefix = "distmetrics conform: " + shown;
  model.header = {{result.plugins.size() > 1 ? "sources" : "plugin", paths},
                  {"name", names},
                  {"built", plugin.describe()}};
  // A shared library names the LibTorch it was built against; a Python source (no build record
  // of its own) the torch its metrics ran on.
  const bool shared_library = plugin.build.interface_version >= 0;
  if (!plugin.build.torch_version.empty())
    model.header.push_back({shared_library ? "plugin LibTorch" : "Python torch", plugin.build.torch_version});
  model.header.push_back({"compared with", std::string("the distmetrics ") + DISTMETRICS_VERSION +
                                               " reference metrics on LibTorch " + DISTMETRICS_TORCH_VERSION +
                                               " (agrees_with_reference) and the single-process run of the plugin's own metric"});
  return model;
}

}  // namespace distmetrics::app::conform_report
