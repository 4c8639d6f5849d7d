// The tables other programs read (`distmetrics tables --json`, docs/cli-contract.md; the Python
// package through its `distmetrics.tables`, and inside the embedded interpreter through
// `_distmetrics_host.tables_json()`): ONE JSON object made from the C++ tables themselves, never
// from a list written out again. What Python code needs of an outcome, a property, a backend, a
// shard policy, an exit code, a reference metric's parameters or a metric source's spelling, it
// reads here.
#pragma once

#include <nlohmann/json.hpp>

namespace distmetrics::harness {

// What `conform` says, exiting with bad input, when the source it checks has nothing to check
// there: a metric it does not provide (--metric NAME), or no scenario that uses its metrics. Its
// messages are built with these phrases, and tables_json() lists them ("conform_nothing_to_check"):
// the pytest plugin's --distmetrics-python skips a variant whose run says one, instead of failing it.
constexpr const char* kConformNoMetric = "has no metric";
constexpr const char* kConformNoScenario = "no scenario under";

// The format of tables_json(); raised when a field changes meaning or goes away (a field added
// leaves it as it is).
constexpr int kTablesFormat = 1;

// {"format", "exit_codes": {name: code}, "outcomes": [...], "properties": [...],
//  "default_properties": [...], "backends": [...], "shard_policies": [...], "placements": [...],
//  "scenario_fields": [...], "reference_metrics": [...], "metric_sources": {kind: prefix},
//  "conform_nothing_to_check": [phrase, ...]} (docs/cli-contract.md, "tables").
nlohmann::json tables_json();

}  // namespace distmetrics::harness
