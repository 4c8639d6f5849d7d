// The tables other programs read (`distmetrics tables --json`, docs/cli-contract.md; the Python
// package through its `distmetrics.tables`, and inside the embedded interpreter through
// `_distmetrics_host.tables_json()`): ONE JSON object made from the C++ tables themselves, never
// from a list written out again. What Python code needs of an outcome, a property, a backend, a
// shard policy, an exit code, a reference metric's parameters or a metric source's spelling, it
// reads here.
#pragma once

#include <nlohmann/json.hpp>

namespace distmetrics::harness {

// The format of tables_json(); raised when a field changes meaning or goes away (a field added
// leaves it as it is).
constexpr int kTablesFormat = 1;

// {"format", "exit_codes": {name: code}, "outcomes": [...], "properties": [...],
//  "default_properties": [...], "backends": [...], "shard_policies": [...], "placements": [...],
//  "reference_metrics": [...], "metric_sources": {kind: prefix}} (docs/cli-contract.md, "tables").
nlohmann::json tables_json();

}  // namespace distmetrics::harness
