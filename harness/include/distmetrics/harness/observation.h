// What one rank saw while running a variant's script: the value (or error) of every compute,
// the local state digest before and after it, how many collectives it issued, timings, and the
// error that stopped the script, if any. The scenario task returns it as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace distmetrics::harness {

// The result of one compute(): a value, or the error it raised.
struct ComputeResult {
  std::optional<nlohmann::json> value;  // Value JSON
  std::string error_type;               // e.g. "NotComputableError"; empty when a value came
  std::string error;

  bool raised() const { return !error_type.empty(); }
  std::string text() const;  // the value's text, or "raised <type>: <message>"
  nlohmann::json to_json() const;
  static ComputeResult from_json(const nlohmann::json& j);
};

struct ComputeRecord {
  int index = 0;  // among the script's computes
  int step = 0;   // index of the step in the script
  ComputeResult result;
  std::string digest_before;  // Metric::state_digest(); empty when the metric cannot tell
  std::string digest_after;
  std::uint64_t collectives = 0;  // issued during this compute
  double seconds = 0;
  // Per property with a rank-side probe, its result at this compute (state_roundtrip: the
  // instance restored from the state saved before the first compute; merge_state: one that
  // merged every rank's saved state).
  std::map<std::string, ComputeResult> probed;
};

struct StepError {
  StepError() = default;
  StepError(int step, std::string op, std::string type, std::string message)
      : step(step), op(std::move(op)), type(std::move(type)), message(std::move(message)) {}

  int step = 0;
  std::string op;    // "setup", "update", "compute", "reset"
  std::string type;  // "InputError", "NotComputableError", ...
  std::string message;
  // When it was raised, in seconds since the epoch (system clock): orders the ranks' errors in
  // time, so that a rank that raised before its peers' waits timed out is the one to blame.
  double at = 0;
  std::string full_type;  // with its namespace: "distmetrics::metrics::NotComputableError"
  std::string where;      // where it was raised, when the exception says ("c10::Error": function, file:line)
  // A wait that gave up (a collective's or a c10d work's timeout): the symptom of a peer that left,
  // not a cause. Set where the exception is caught (step_error, is_wait_timeout).
  bool wait_timed_out = false;
};

// The type name by which a metric (its factory, update() or compute()) says that it cannot take
// this variant: a parameter combination or an input it does not support (distmetrics.Unsupported
// in Python, any class named Unsupported in C++). The variant is then a skip with its message.
constexpr const char* kUnsupportedType = "Unsupported";
// The type name by which a metric says that a step does not apply to it, by a convention it
// declares (distmetrics.NotApplicable in Python): a Python class that rejects a batch of no rows
// is not fed one. The property that step would judge is then "not applicable", with the message
// as its reason, never a pass.
constexpr const char* kNotApplicableType = "NotApplicable";

// A StepError for an exception caught at `step` in `op`, stamped with the time now.
StepError step_error(int step, const std::string& op, const std::exception& e);

// Whether an error is a wait that gave up (a collective's or a c10d work's timeout): the
// symptom of a peer that left, not a cause. A CollectiveError of kind Timeout and a
// BackendTimeout say it by their type; a foreign library's error (a metric's own c10d wait, a
// Python library's) only in its words. step_error() sets StepError::wait_timed_out from it.
bool is_wait_timeout(const std::exception& e);

struct RankObservation {
  int rank = 0;
  std::string state_device, input_device, comm_device;
  std::int64_t samples = 0;  // in this rank's shard
  std::int64_t batches = 0;
  std::vector<ComputeRecord> computes;
  std::optional<StepError> error;  // the script stopped at this step
  // The first update() of an empty batch that raised: the script went on without that update
  // (and later empty ones), so that the properties still judge the rest.
  std::optional<StepError> empty_rejected;
  // Why an update() of an empty batch was not fed at all (kNotApplicableType: a declared
  // convention), empty when it was fed or there was none.
  std::string empty_not_fed;
  // Per property with a rank-side probe: why it has nothing to judge on this rank (the metric
  // cannot save or merge its state), and an error that fails it (saving or loading raised).
  std::map<std::string, std::string> probe_skipped, probe_error;
  std::uint64_t collectives = 0;   // in the whole script
  // Every collective this rank issued, in order: "all_reduce(sum) #3 (int64 [2])".
  std::vector<std::string> trace;
  double seconds = 0;

  const ComputeRecord* compute(int index) const;
  nlohmann::json to_json() const;
  static RankObservation from_json(const nlohmann::json& j);
};

// What a rank sends the supervisor as it goes (runtime::post_task_record), so that the steps it
// completed are known when it later hangs, crashes or times out in a collective: one header, then
// one record per script step it completed (the computes, empty-update and probe news of that step).
nlohmann::json observation_header_record(const RankObservation& obs);
// The record of step `step`, whose computes are obs.computes from `first_compute` on.
nlohmann::json step_done_record(const RankObservation& obs, int step, std::size_t first_compute);

// A rank's observation rebuilt from its records: what it saw in the steps it completed.
struct PartialObservation {
  RankObservation observation;
  int steps_done = 0;  // script steps 0 .. steps_done-1 completed
};
// nullopt when the records hold no header (the rank died before its first, or its launch mode
// carries none); throws on a record that does not read.
std::optional<PartialObservation> observation_from_records(const std::vector<nlohmann::json>& records);

// The qualified class name of an exception ("distmetrics::metrics::NotComputableError",
// "c10::Error"); runtime::exception_type_name gives the short one.
std::string exception_full_type_name(const std::exception& e);

}  // namespace distmetrics::harness
