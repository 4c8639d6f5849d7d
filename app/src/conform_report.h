// The conformance report's data: the JSON report (the `run` report plus the plugin, the
// properties and the matrix metric x property x variant with pass, fail, hang, crash, error or
// skip in every cell), and the report model built from it with conform's header (the plugin
// and the reference it was compared with). The views (console, Markdown, HTML) are harness's
// (report_model.h); JUnit is `run`'s.
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
};

// The matrix's columns: the properties judged anywhere in the run, in docs/design.md's order, then
// expected_error and agrees_with_reference.
std::vector<std::string> matrix_properties(const ConformResult& result);

// A cell: an outcome name (harness/outcome.h), or "" when the property was not checked on that
// variant. A variant that did not pass or fail (hung, crashed, went past its memory limit,
// raised, was skipped) has its outcome in every column: none of its properties could be judged.
std::string matrix_cell(const harness::Verdict& verdict, const std::string& property);

// Findings about a metric rather than one variant, once per metric: "rejects an empty batch"
// (the variants that failed accepts_empty_batch; the rest of their scripts ran without it):
// [{metric, finding, error, variants: [ids]}]. The JSON report's "findings".
nlohmann::json metric_findings(const ConformResult& result);

nlohmann::json json_report(const ConformResult& result);
// The model of `report` (json_report(result)), titled and headed for the plugin; rows are metrics.
harness::ReportModel report_model(const ConformResult& result, const nlohmann::json& report);

}  // namespace distmetrics::app::conform_report
