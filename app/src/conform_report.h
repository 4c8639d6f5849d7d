// The conformance report: the report model of conform's verdicts, laid out as a matrix metric x
// property (pass, fail, hang, crash, error or skip in every cell), with conform's header (the
// plugin and the reference it was compared with) and the fields its JSON report adds to `run`'s
// (the plugin, the properties, the matrix, the findings). The views (JSON, JUnit, console,
// Markdown, HTML) are harness's (report_model.h).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "distmetrics/harness/report_model.h"
#include "distmetrics/harness/verdict.h"
#include "distmetrics/plugin/loader.h"

namespace distmetrics::app::conform_report {

using plugin::Plugin;

struct ConformResult {
  const Plugin* plugin = nullptr;        // the first source (the only one, but for several --python)
  std::vector<const Plugin*> plugins;    // every source, in the order given
  std::vector<harness::Verdict> verdicts;
  // Per verdict: the plugin metric it checked (unqualified; with several sources, followed by
  // " (<source name>)"), and its source.
  std::vector<std::string> metrics;
  std::vector<const Plugin*> sources;
  std::map<const Plugin*, std::string> labels;  // several sources: how rows and headers name each
  // Per scenario name: the properties its variants are checked for (the matrix's columns, also
  // for a variant that hung before any could be judged).
  std::map<std::string, std::vector<std::string>> checked;
  std::string started;
  double seconds = 0;
  double setup_seconds = 0;  // before the first variant: sources, their checks, the helper's start
};

// The matrix's columns: the properties judged anywhere in the run, in docs/design.md's order, then
// expected_error and agrees_with_reference.
std::vector<std::string> matrix_properties(const ConformResult& result);

// A finding about a metric rather than one variant, once per metric: "rejects an empty batch"
// (the variants that failed accepts_empty_batch; the rest of their scripts ran without it).
struct MetricFinding {
  std::string metric;
  std::string finding;             // "rejects an empty batch"
  std::string error;               // what the first rank that rejected it raised: "ValueError: ..."
  std::vector<std::string> variants;  // their ids
};
std::vector<MetricFinding> metric_findings(const ConformResult& result);
// As the JSON report's "findings": [{metric, finding, error, variants}].
nlohmann::json findings_json(const std::vector<MetricFinding>& findings);

// The model of the run's verdicts, titled and headed for the plugin; rows are metrics, cells
// harness::matrix_cell; its JSON fields: "plugin", "plugins" (several sources), "findings".
harness::ReportModel report_model(const ConformResult& result);

}  // namespace distmetrics::app::conform_report
