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

struct DataSpec;
struct Dataset;

// One input a generator produces per sample, as a metric's batch holds it.
struct InputDecl {
  std::string name;  // the batch's field: "input", "target", "weight"
  std::string shape;  // of a batch of N samples: "[N]", "[N, C]" (C, H, W...: its parameters)
  std::string dtype;  // "float (data.dtype)", "int64", "int64 or float (output)"
  std::string text;   // what docs/scenarios.md says of it: "`[N]` probabilities, logits (float) or labels (int64 0/1)"
};

// How a generator's samples reach a metric. Tensors: rows of metrics::Batch's input, target and
// weight, each sample a row, sharded by row (every shard policy, batch size, placement and input
// dtype applies). Structured: samples that are not tensors (strings, per-image lists of dicts),
// which only a Python metric reads: made once by the supervisor into a file of torch.save'd
// samples (DataSpec::structured), each rank given the indices of its rows
// (metrics::Batch::structured_file), as `data.python` generators that return lists do
// (docs/scenarios.md, "Structured data"); such a generator names the Python that makes them.
enum class DataCarrier { Tensors, Structured };

// A data generator: ONE descriptor in ONE table (harness/src/data/generators/table.cpp, each
// descriptor in its own file there). Its name, parameters (checked by the one resolver,
// runtime::resolve_declared_params: types, choices, ranges; `check` for what ties two of them),
// what it produces and how, the values explore draws (each parameter's `draws`), the skewed
// shard policy's key and its docs row come from the descriptor; validation, explore's space and
// shrinker, the scenario writer and docs/scenarios.md's table derive from it (TablesTest checks
// the docs row).
struct DataGenerator {
  std::string name;         // "multiclass"
  std::string description;  // one line: what input/target/weight it produces
  // Its parameters, then the ones every generator takes (per-sample weights: common_params()).
  std::vector<runtime::ParamDecl> params;
  std::vector<InputDecl> produces;  // input, target (if any); weight when `weights` is not none
  DataCarrier carrier = DataCarrier::Tensors;
  // Structured: the Python callable ("module:attribute") that makes the samples from (seed,
  // params), as a `data.python` generator is called.
  std::string python;
  // The parameter that is the data's class (or label) count, which explore ties to the metric's
  // own (num_classes, num_labels); empty: none.
  std::string class_count;
  // Numbers one sample holds (input, target and weight together, about): where generated data
  // turn lazy (kWholeDataElements). Null: 2 * dims + 1.
  std::int64_t (*elements_per_sample)(const nlohmann::json& params) = nullptr;
  // Makes the rows `rows` (global sample indices, in that order) into out.input and out.target:
  // sample i's numbers come from counters of i only, so a row made alone is the same row, to the
  // bit, as in the whole data set. Tensors only.
  void (*make)(const DataSpec& spec, const std::vector<std::int64_t>& rows, Dataset& out) = nullptr;
  // What the parameters cannot say one at a time (class_weights' length against num_classes,
  // high >= low); throws runtime::FieldError naming the parameter. Null: nothing.
  void (*check)(const std::string& owner, const nlohmann::json& params) = nullptr;
};

// Every generator, with its parameters (the ones every generator takes, for sample weights,
// included).
const std::vector<DataGenerator>& data_generators();
const DataGenerator* find_generator(const std::string& name);
std::vector<std::string> generator_names();
// The parameters every generator takes: per-sample weights (weights, weight_low, weight_high).
const std::vector<runtime::ParamDecl>& common_generator_params();
// Its row of docs/scenarios.md's generator table: "| `binary` | input | target | parameters |".
std::string generator_docs_row(const DataGenerator& generator);
// What is missing or contradictory in descriptors (an empty name or description, a name used
// twice, nothing produced, a tensor generator without `make`, a structured one without its
// Python, a class_count that is not an int parameter); one line each; empty when sound.
std::vector<std::string> generator_table_problems(const std::vector<DataGenerator>& table);

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
// Whether generate_data makes a spec's data whole with its generator (not a file's, not
// Python's, not structured, not lazy): then any rows of them can be made alone (generate_rows).
bool generated_whole(const DataSpec& spec);
// The rows `rows` (global sample indices, in that order) of a generator's data, as a data set of
// their own: its row k is sample rows[k], to the bit as in the whole data. What a rank of a
// variant feeds, made without the rows of the other ranks.
Dataset generate_rows(const DataSpec& spec, const std::vector<std::int64_t>& rows);

// The label-skew key of each of the first n samples: the mean of the sample's target row, or
// of its input row when there is no target.
std::vector<double> label_sort_keys(const Dataset& data, std::int64_t n);

}  // namespace distmetrics::harness
