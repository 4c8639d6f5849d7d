// Scenario data: deterministic generators. The same (generator, params, seed) gives the same
// bytes on every rank and every run, independent of LibTorch's global RNG and version: values
// come from a counter-based generator on the CPU, sample i depending only on (seed, i), so the
// first n samples do not change when num_samples grows. So any row can be made alone: large
// generated data (generated_lazily) are never held whole, each batch is made when it is fed.
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
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

// The numbers one sample of a generator holds (input, target and weight together, about).
std::int64_t generator_elements_per_sample(const std::string& generator, const nlohmann::json& params);

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

// Generated data past this many numbers are lazy (generated_lazily): below it, holding them whole
// is faster (one index_select per batch); above it, memory per rank follows the batch size, not
// num_samples. Data files and Python data are always whole and stay below it (data_files.h).
constexpr std::int64_t kWholeDataElements = 20'000'000;
// True for a generator's data of more than kWholeDataElements numbers.
bool generated_lazily(const DataSpec& spec);

// The global data set, on the CPU, rows are samples in global order: held whole (input, target,
// weight), or lazy (`lazy` set, no tensors held): rows() then generates just the rows asked for.
struct Dataset {
  at::Tensor input;
  at::Tensor target;  // undefined for generators without targets
  at::Tensor weight;  // undefined unless the generator was asked for weights
  // One number per sample that orders samples by label (or target value): used by the
  // label-skewed shard policy. Empty for lazy data: sort_keys() makes them.
  std::vector<double> sort_key;
  // Structured samples (DataSpec::structured): `input` is each sample's index (int64 [N]) into
  // this file, target and weight are undefined; rows() passes the file on with the indices.
  std::string structured_file;
  // Lazy data: the spec rows() generates from, and the input dtype (input_dtype.h) its rows are
  // cast to (and back to the generated dtypes when `lazy_round_back`): "" for none.
  std::shared_ptr<const DataSpec> lazy;
  std::string lazy_dtype;
  bool lazy_round_back = false;

  bool is_lazy() const { return lazy != nullptr; }
  std::int64_t size() const;
  // The given rows, in the given order, as a metric batch (CPU tensors).
  metrics::Batch rows(const std::vector<std::int64_t>& indices) const;
  // sort_key, or for lazy data the same keys generated chunk by chunk (8 bytes a sample).
  std::vector<double> sort_keys() const;
  // Throws std::invalid_argument naming `field` when the data are lazy: for what needs the
  // whole tensors (a Python reference). `field` is the scenario field that asked for them.
  void require_whole(const std::string& field) const;
};

// The data of a spec: generated (lazy when generated_lazily), or read from its file (once per
// process, data_files.h).
Dataset generate_data(const DataSpec& spec);
// A generator's data held whole, or lazy, whatever their size (generate_data picks by size;
// validation asks for one of them, and the tests compare the two).
Dataset generate_whole_data(const DataSpec& spec);
Dataset generate_lazy_data(const DataSpec& spec);

// The label-skew key of each of the first n samples: the mean of the sample's target row, or
// of its input row when there is no target.
std::vector<double> label_sort_keys(const Dataset& data, std::int64_t n);

}  // namespace distmetrics::harness
