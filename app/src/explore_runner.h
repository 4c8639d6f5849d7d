// How `explore` runs its cases: a folder of scenario files through the path `distmetrics run`
// (a reference metric) or `distmetrics conform` (a plugin's or a Python source's metric) takes,
// read back from its JSON report. One run keeps one rank pool per world size for all the files
// it is given. (When harness::Session lands, this is the one place to point at it.)
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace distmetrics::app {

struct CaseSource {
  std::string metric;  // the metric's name in the scenarios
  std::string plugin;  // --plugin PATH, or empty
  std::string python;  // --python SOURCE, or empty
  double deadline = 10;
  bool allow_python = false;
};

struct CaseRun {
  std::map<std::string, nlohmann::json> verdicts;  // scenario name -> the variant's verdict (report object)
  std::string error;                               // the run produced no report: why
};

// Runs every scenario file in `folder` (each of one variant).
CaseRun run_case_folder(const CaseSource& source, const std::string& folder);

}  // namespace distmetrics::app
