// Comparing metric results (Value JSON) within a tolerance, leaf by leaf through nested dicts
// and lists: floats with rtol/atol, integer tensors and the named entries listed as exact
// (counts) exactly; NaN equals NaN; a leaf of a kind no comparison understands (a Python
// metric's string or object) is a difference that says "cannot compare a str at path".
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "distmetrics/harness/scenario.h"

namespace distmetrics::harness {

struct Comparison {
  bool equal = true;
  // Largest absolute difference between corresponding numbers; infinity when the two differ in
  // kind or shape (or one is NaN and the other is not); 0 when equal.
  double difference = 0.0;
  std::string detail;  // where and how they differ first: "map_per_class[3]: 0.5 vs expected 0.52"
};

// `expected` is the reference (its magnitude scales rtol), `actual` the value under test.
Comparison compare_values(const nlohmann::json& expected, const nlohmann::json& actual, const Tolerance& tolerance);

// Compact text of a Value JSON for messages (long tensors abbreviated).
std::string value_text(const nlohmann::json& value);

}  // namespace distmetrics::harness
