// The verdict on one variant: its outcome, and the result of every property checked.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/outcome.h"
#include "distmetrics/harness/variant.h"

namespace distmetrics::harness {

struct PropertyResult {
  std::string name;
  // Pass, Fail or Skip; Hang for a check that did not finish within the variant's deadline (it
  // makes the verdict a hang).
  Outcome outcome = Outcome::Pass;
  std::string message;              // multi-line, human
  nlohmann::json single;            // the single-process value (Value JSON), or null
  nlohmann::json ranks = nlohmann::json::array();  // each rank's value (Value JSON or null)
  std::optional<double> difference;                // largest difference seen, when numeric
  bool expected_failure = false;    // listed in [expect] fail (and failed, as it should)
  std::string consequence_of;       // failed because of another property's root cause (root_cause.h)

  nlohmann::json to_json() const;
};

// One collective a rank issued, for the report's per-rank timeline.
struct TraceEntry {
  std::uint64_t seq = 0;
  std::string op;                   // "all_reduce(sum)", "all_gather", ...
  std::string dtype;                // empty for barrier
  std::vector<std::int64_t> shape;  // this rank's contribution
  int script_step = 0;              // 1-based script step it was issued in; 0 when not recorded
  std::string step_text;            // that step as written ("compute"), when recorded
};

// What the report shows of one rank: how it ended, its share of the data, its collectives.
struct RankReport {
  int rank = 0;
  std::string state;                     // "finished", "raised", "timed_out", "stuck", "crashed", "ended"
  std::optional<std::int64_t> samples;   // in its shard, when the rank reported them
  std::optional<std::int64_t> batches;
  std::vector<TraceEntry> trace;         // every collective it completed or entered, in order
  std::optional<std::uint64_t> blocked_in;  // seq of the collective it was inside when it stopped
  std::string error;                     // one line, when it raised or died

  // with_trace false: "trace" is empty (a variant that passed: its collectives explain nothing and
  // would make up most of a large report).
  nlohmann::json to_json(bool with_trace = true) const;
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
  std::vector<RankReport> ranks;  // per rank, when the variant ran (empty for a skip)
  nlohmann::json tolerance;       // {"rtol", "atol", "exact"} of the scenario, or null
  // Where the ranks' collectives of one script step parted (runtime::find_step_deviation):
  // {script_step, compute, seq, op, more, fewer, blamed}, or null.
  nlohmann::json deviation;

  const PropertyResult* property(const std::string& name) const;
  nlohmann::json to_json() const;  // the JSON report's per-variant object
};

}  // namespace distmetrics::harness
