// Scenario data: deterministic generators. The same (generator, params, seed) gives the same
// bytes on every rank and every run, independent of LibTorch's global RNG and version: values
// come from a counter-based generator on the CPU, sample i depending only on (seed, i), so the
// first n samples do not change when num_samples grows.
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "distmetrics/runtime/params.h"
#include "distmetrics/metrics/batch.h"

namespace distmetrics::harness {

struct GeneratorSpec {
  std::string name;         // "multiclass"
  std::string description;  // what input/target/weight it produces (shapes, dtypes, ranges)
  std::vector<runtime::ParamDecl> params;
};

// Every generator, with its parameters (the ones every generator takes, for sample weights,
// included).
const std::vector<GeneratorSpec>& data_generators();
const GeneratorSpec* find_generator(const std::string& name);
std::vector<std::string> generator_names();

// Checks and completes a generator's parameters (throws runtime::FieldError naming the parameter).
nlohmann::json resolve_generator_params(const std::string& generator, const nlohmann::json& params);

struct DataSpec {
  std::string generator;  // empty when the data come from a file or a Python generator
  nlohmann::json params = nlohmann::json::object();  // resolved (defaults filled in)
  std::uint64_t seed = 0;
  std::int64_t num_samples = 0;  // with `file`: -1 until the file was read (then its rows)
  std::string dtype = "float32";  // of floating-point tensors: "float32" or "float64"
  // data.file: the absolute path of a .pt or .npz file (data_files.h). data.python: the
  // "module:attr" of a Python generator, whose data the supervisor writes to `file`.
  std::string file;
  std::string python;
  // The samples are not tensors (data.python returned lists of dicts, strings, or data.structured
  // named such a file: docs/scenarios.md, "Structured data"): `file` holds them as torch.save
  // wrote them, which only the Python side reads; the C++ side sees each sample as its index
  // (metrics::Batch::structured_file).
  bool structured = false;

  // "generator 'multiclass'", "file '/abs/x.pt'", "Python generator 'pkg.gen:make'".
  std::string source_text() const;

  nlohmann::json to_json() const;
  static DataSpec from_json(const nlohmann::json& j);
};

// The whole global data set, on the CPU, rows are samples in global order.
struct Dataset {
  at::Tensor input;
  at::Tensor target;  // undefined for generators without targets
  at::Tensor weight;  // undefined unless the generator was asked for weights
  // One number per sample that orders samples by label (or target value): used by the
  // label-skewed shard policy.
  std::vector<double> sort_key;
  // Structured samples (DataSpec::structured): `input` is each sample's index (int64 [N]) into
  // this file, target and weight are undefined; rows() passes the file on with the indices.
  std::string structured_file;

  std::int64_t size() const { return static_cast<std::int64_t>(sort_key.size()); }
  // The given rows, in the given order, as a metric batch (CPU tensors).
  metrics::Batch rows(const std::vector<std::int64_t>& indices) const;
};

// The data of a spec: generated, or read from its file (once per process, data_files.h).
Dataset generate_data(const DataSpec& spec);

// The label-skew key of each of the first n samples: the mean of the sample's target row, or
// of its input row when there is no target.
std::vector<double> label_sort_keys(const Dataset& data, std::int64_t n);

}  // namespace distmetrics::harness
