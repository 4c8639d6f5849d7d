// Python a scenario file names: a data generator (data.python = "pkg.mod:make") and a reference
// (reference.python = "sklearn.metrics:f1_score"). The harness does not embed Python (pyhost/ is a
// higher layer): the program that does installs these hooks (the CLI, when built with pyhost/),
// and whether scenario files may call Python at all is the command line's decision
// (`--allow-python`): a scenario file alone never makes distmetrics run code.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>

#include "distmetrics/harness/data_files.h"
#include "distmetrics/harness/scenario.h"
#include "distmetrics/metrics/batch.h"

namespace distmetrics::harness {

struct ScenarioPython {
  // Imports the module and checks that the attribute is a callable; throws std::runtime_error
  // saying what is wrong.
  std::function<void(const std::string& spec)> check;
  // make(seed, params) -> {"input": ..., "target": ..., "weight": ...}: tensors or NumPy arrays
  // (returned as `tensors`), or sequences of samples of any structure, which the Python side
  // saves to `structured_path` (the first `num_samples` of them when it is >= 0) and counts.
  struct Generated {
    TensorMap tensors;
    std::int64_t structured_rows = -1;  // >= 0: structured samples, saved to structured_path
  };
  std::function<Generated(const std::string& spec, std::uint64_t seed, const nlohmann::json& params,
                          const std::string& structured_path, std::int64_t num_samples)>
      generate;
  // data.file with data.structured = true: loads the file (torch.load, which can run code: only
  // with --allow-python), checks it holds {"input": [samples], "target": [samples]} and returns
  // how many samples it holds.
  std::function<std::int64_t(const std::string& path)> structured_rows;
  // fn(y_true, y_pred, sample_weight=..., **kwargs) on NumPy arrays of the whole data: target,
  // input, weight (passed only when the data have weights); without a target, fn(input, ...).
  // Structured data (all.structured_file set): the samples of that file, as the generator gave
  // them (lists), in the same order.
  // Returns Value JSON (a number, a tensor, named values); throws std::runtime_error with the
  // Python error's type, message and last frames.
  std::function<nlohmann::json(const std::string& spec, const nlohmann::json& kwargs, const metrics::Batch& all)> reference;
};

void install_scenario_python(ScenarioPython hooks);
// Set by the command line (--allow-python); off by default.
void allow_scenario_python(bool allowed);
// Why this process cannot call the Python a scenario names ("" when it can): not built with
// Python, or not allowed by the command line.
std::string scenario_python_unavailable();
// Why this process cannot call distmetrics' own Python (a built-in data generator's maker, such
// as `text`'s distmetrics.text_data:make): only when it has no Python hooks. --allow-python gates
// the code a scenario file names, not the generators this project ships.
std::string builtin_python_unavailable();
// The installed hooks (call only when scenario_python_unavailable() is "").
const ScenarioPython& scenario_python();

// The scenario's [reference] on all of `data`: Value JSON. Called once per process for the same
// reference and data (then from memory, a failure too); throws std::runtime_error.
nlohmann::json python_reference_value(const Scenario& scenario, const Dataset& data);

// "pkg.mod:attr" (dotted names on both sides)? Else why not.
std::string python_callable_spec_problem(const std::string& spec);

}  // namespace distmetrics::harness
