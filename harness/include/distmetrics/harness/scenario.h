// Scenario files: what to check, declared in TOML (docs/scenarios.md documents every field).
// Loading validates everything it can without running ranks: field names and types, the
// metric and its parameters (through its registry), the data generator and its parameters,
// shard policies, placements, backends, the script, properties, expectations; and it feeds a
// few generated samples to the metric once, so that data the metric rejects is reported here,
// with the file and line, instead of on every rank of every variant.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/data.h"
#include "distmetrics/harness/script.h"

namespace distmetrics::harness {

// One problem in a scenario file: where it is and what is wrong.
struct Diagnostic {
  std::string file;
  int line = 0;    // 1-based; 0 when the problem concerns the whole file
  int column = 0;  // 1-based; 0 when unknown
  std::string field;  // dotted path, e.g. "data.params.num_classes"; empty for the whole file
  std::string message;

  // "scenarios/core/x.toml:12:1: data.params.num_classes: message"
  std::string to_string() const;
};

struct Tolerance {
  double rtol = 1e-6;
  double atol = 1e-9;
  // Entries of named values compared exactly (like integer tensors always are), e.g. "count".
  std::vector<std::string> exact;
};

struct Golden {
  nlohmann::json value;  // Value JSON: a number, a tensor {dtype, shape, values} or named entries
  double rtol = 1e-6;
  double atol = 1e-9;
};

// [reference]: a Python callable judged on the whole data (agrees_with_reference).
struct PythonReference {
  std::string python;                                 // "sklearn.metrics:f1_score"
  nlohmann::json kwargs = nlohmann::json::object();  // [reference.kwargs]
};

struct Expectation {
  // Every rank (and the single-process reference) must raise this error type at compute
  // number `compute` (0-based), all together; empty: no error is expected.
  std::string error;
  int compute = 0;
  // Properties that must FAIL (an expected failure: the variant passes when they fail, and
  // fails when they hold), with the reason.
  std::vector<std::string> fail;
  std::string reason;
  // What the metric declares compute() returns when no rank has a sample ("zero" or "nan", its
  // library's convention; `conform` sets it from a Python source): the expected error is then
  // also met by the same value on every rank and in the single process. Empty: the error only.
  std::string no_data_value;
};

struct Scenario {
  std::string name;  // relative to the scenario root, without .toml: "core/accuracy_multiclass"
  std::string file;  // the path it was loaded from
  std::string description;
  std::vector<std::string> tags;  // "slow" becomes a marker

  std::string metric;
  nlohmann::json metric_params = nlohmann::json::object();  // resolved by the metric's registry

  DataSpec data;
  std::int64_t batch_size = 1;

  std::vector<int> world_sizes;
  std::vector<std::string> backends;
  std::vector<std::string> shards;
  std::vector<std::string> placements;
  std::vector<std::string> dtypes;  // input dtypes (input_dtype.h); empty: the data as generated

  std::vector<Step> script;
  std::string single_process = "global";  // "global" or "per_step"
  std::vector<std::string> properties;    // checked, besides no_hang which always is
  Tolerance tolerance;
  std::optional<Golden> golden;
  std::optional<PythonReference> reference;
  Expectation expect;
  double deadline_seconds = 30.0;
  std::vector<std::int64_t> batch_invariant_sizes;  // single-process re-runs for batch_invariant

  bool checks(const std::string& property) const;
  bool expects_failure_of(const std::string& property) const;
  // Whether it names Python code (data.python, reference.python; data.structured is checked where
  // its file is read): running it needs --allow-python.
  bool names_python() const { return !data.python.empty() || reference.has_value(); }

  // The form sent to conform's helper worker (and read back there); a rank of a variant is sent
  // only what it reads, with the supervisor's plan (make_variant_job).
  nlohmann::json to_json() const;
  static Scenario from_json(const nlohmann::json& j);
};

// Error types a scenario may expect.
const std::vector<std::string>& expected_error_names();

struct LoadResult {
  std::optional<Scenario> scenario;    // set when there were no diagnostics
  std::vector<Diagnostic> diagnostics;
};

// Loads and validates one scenario file. `name` is its scenario name (see scenario_name_for).
// Never throws for a bad file: every problem becomes a diagnostic.
LoadResult load_scenario(const std::string& path, const std::string& name);
// The same from TOML text (explore's generated scenarios, and tests); `path` is only used in diagnostics.
LoadResult load_scenario_text(const std::string& text, const std::string& path, const std::string& name);

// The batch sizes batch_invariant tries when a scenario gives none: 1 and 2 * batch_size + 1,
// never the scenario's own (the loader fills them in; the scenario writer leaves them out).
std::vector<std::int64_t> default_batch_invariant_sizes(std::int64_t batch_size);

}  // namespace distmetrics::harness
