// The verdict on one variant: its outcome, and the result of every property checked.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/variant.h"

namespace distmetrics::harness {

enum class Outcome { Pass, Fail, Hang, Crash, Error, Skip };
const char* to_string(Outcome outcome);  // "pass", "fail", ...

struct PropertyResult {
  std::string name;
  Outcome outcome = Outcome::Pass;  // Pass, Fail or Skip
  std::string message;              // multi-line, human
  nlohmann::json single;            // the single-process value (Value JSON), or null
  nlohmann::json ranks = nlohmann::json::array();  // each rank's value (Value JSON or null)
  std::optional<double> difference;                // largest difference seen, when numeric
  bool expected_failure = false;    // listed in [expect] fail (and failed, as it should)
  std::string consequence_of;       // failed because of another property's root cause (root_cause.h)

  nlohmann::json to_json() const;
};

struct Verdict {
  Variant variant;
  Outcome outcome = Outcome::Pass;
  std::string reason;  // one line: why not pass
  double seconds = 0;
  std::vector<PropertyResult> properties;
  std::string diagnosis;  // hang/crash diagnosis; empty otherwise
  // The root cause of the failed properties (RootCause::to_json: property, headline, evidence,
  // hint, consequences), or null.
  nlohmann::json root_cause;
  // Each rank's shard, the first clue to an uneven-shard bug: [{rank, samples, batches}].
  nlohmann::json shards = nlohmann::json::array();

  const PropertyResult* property(const std::string& name) const;
  nlohmann::json to_json() const;  // the JSON report's per-variant object
};

}  // namespace distmetrics::harness
