// Scenario data the user brings instead of a generator (docs/scenarios.md, "Your own data"):
// - data.file: a dict of tensors saved with Python's torch.save({"input": ..., "target": ...,
//   "weight": ...}), read with LibTorch's pickle loader; or a NumPy .npz (np.savez; the
//   compressed form needs zlib at build time) with the same keys;
// - data.python: a Python callable that returns that dict; the supervisor calls it once and
//   writes what it returned to a .pt file of its own, so that the ranks read it as a user's file
//   and never start an interpreter for it.
// A file is read once per process (the ranks of a pool keep it across variants).
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <stdexcept>
#include <string>

#include "distmetrics/harness/data.h"

namespace distmetrics::harness {

// A data file (or a generator's dict) that cannot be used; the message says what is wrong and
// what to do.
class DataFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using TensorMap = std::map<std::string, at::Tensor>;

// The tensors of a .pt (torch.save of a dict of tensors) or .npz file, by key. Throws DataFileError.
TensorMap read_tensor_file(const std::string& path);
// Writes tensors as torch.save writes a dict (the zip format); throws DataFileError.
void write_tensor_file(const std::string& path, const TensorMap& tensors);

// The global data set from the tensors: `input` required, `target` and `weight` optional, every
// other key refused; rows are samples (the same count in each), `weight` one number per row.
// Floating-point tensors become `dtype`, integers and booleans int64. `num_samples` >= 0 keeps
// the first rows (refused when there are fewer); < 0 keeps them all. `what` names the source in
// messages ("file 'x.pt'"). Throws DataFileError.
Dataset dataset_from_tensors(const TensorMap& tensors, const std::string& dtype, std::int64_t num_samples,
                             const std::string& what);

// The data of a spec with `file` set, read once per process (then from memory, while the file's
// size and modification time stay the same). Throws DataFileError.
Dataset load_data_file(const DataSpec& spec);

// Calls the spec's Python generator (installed hooks; see scenario_python.h), checks what it
// returned, writes it to a private temporary .pt file (removed when the process exits) and sets
// spec.file to it and spec.num_samples to its rows. Throws DataFileError.
// builtin: the Python is a built-in generator's maker (DataGenerator::python), which needs the
// Python hooks but not --allow-python (builtin_python_unavailable).
void materialize_python_data(DataSpec& spec, bool builtin = false);
// Removes those files now: for a program that leaves without running static destructors (the
// CLI's _Exit), once nothing will read them again.
void remove_generated_data_files();

}  // namespace distmetrics::harness
