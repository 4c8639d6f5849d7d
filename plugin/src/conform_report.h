// The conformance report: a matrix metric x property x variant (backend, world size, shard,
// placement) with pass, fail, hang, crash, error or skip in every cell, and under it, for each
// variant that did not pass, what differed and the one command that reproduces it. On the
// console, in Markdown, in JSON (the `run` report plus the plugin and the matrix) and in JUnit.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "distmetrics/harness/verdict.h"
#include "distmetrics/plugin/loader.h"

namespace distmetrics::plugin::detail {

struct ConformResult {
  const Plugin* plugin = nullptr;
  std::vector<harness::Verdict> verdicts;
  std::vector<std::string> metrics;  // per verdict: the plugin metric it checked (unqualified)
  // Per scenario name: the properties its variants are checked for (the matrix's columns, also
  // for a variant that hung before any could be judged).
  std::map<std::string, std::vector<std::string>> checked;
  std::string started;
  double seconds = 0;
};

// The matrix's columns: the properties judged anywhere in the run, in docs/design.md's order, then
// expected_error and agrees_with_reference.
std::vector<std::string> matrix_properties(const ConformResult& result);

// A cell: "pass", "fail", "hang", "crash", "error", "skip", or "" when the property was not
// checked on that variant. A variant that hung, crashed, raised or was skipped has its outcome
// in every column: none of its properties could be judged.
std::string matrix_cell(const harness::Verdict& verdict, const std::string& property);

// "[ 3/12] PASS  mean_absolute_error:gloo-ws2-even-cpu  (0.41 s)"
void print_progress(std::ostream& out, const harness::Verdict& verdict, int done, int total);
// The matrices, the details of every variant that did not pass, and the last line.
void print_console_report(std::ostream& out, const ConformResult& result, bool quiet);
std::string markdown_report(const ConformResult& result);
nlohmann::json json_report(const ConformResult& result);

}  // namespace distmetrics::plugin::detail
