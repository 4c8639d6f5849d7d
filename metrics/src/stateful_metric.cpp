#include "distmetrics/metrics/stateful_metric.h"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <cstdio>
#include <set>
#include <stdexcept>

#include "distmetrics/runtime/comm.h"
#include "distmetrics/metrics/input_checks.h"
#include "distmetrics/metrics/internal/faults.h"

namespace distmetrics::metrics {
namespace {

constexpr Reduction kReduceOrder[] = {Reduction::Sum, Reduction::Max, Reduction::Min, Reduction::Prod};

runtime::ReduceOp reduce_op(Reduction reduction) {
  switch (reduction) {
    case Reduction::Sum: return runtime::ReduceOp::Sum;
    case Reduction::Max: return runtime::ReduceOp::Max;
    case Reduction::Min: return runtime::ReduceOp::Min;
    case Reduction::Prod: return runtime::ReduceOp::Prod;
    case Reduction::Gather: break;
  }
  throw std::logic_error("reduce_op: gather is not an all_reduce");
}

// FNV-1a, 64 bit: a stable digest that does not depend on the standard library's std::hash.
class Fnv1a {
 public:
  void add(const void* data, std::size_t n) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) {
      hash_ ^= bytes[i];
      hash_ *= 1099511628211ULL;
    }
  }
  void add(const std::string& s) { add(s.data(), s.size() + 1); }  // with the terminator, as a separator
  std::string hex() const {
    char out[17];
    std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(hash_));
    return out;
  }

 private:
  std::uint64_t hash_ = 1469598103934665603ULL;
};

}  // namespace

const char* to_string(Reduction reduction) {
  switch (reduction) {
    case Reduction::Sum: return "sum";
    case Reduction::Max: return "max";
    case Reduction::Min: return "min";
    case Reduction::Prod: return "prod";
    case Reduction::Gather: return "gather";
  }
  return "?";
}

const at::Tensor& StateValues::operator[](const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw std::out_of_range("StateValues: no state named \"" + name + "\"");
  return it->second;
}

void StateValues::merge(const StateValues& other) {
  for (const auto& [name, value] : other.values_) values_[name] = value;
}

StatefulMetric::StatefulMetric(std::string name) : name_(std::move(name)) {}

void StatefulMetric::add_state(const std::string& name, const at::Tensor& initial, Reduction reduction) {
  for (const State& s : states_) {
    if (s.name == name) throw std::logic_error(name_ + ": state \"" + name + "\" declared twice");
  }
  if (!initial.defined()) throw std::logic_error(name_ + ": state \"" + name + "\" has no initial value");
  if (reduction == Reduction::Gather && (initial.dim() < 1 || initial.size(0) != 0)) {
    throw std::logic_error(name_ + ": gather state \"" + name + "\" must start as an empty [0, ...] tensor");
  }
  State s;
  s.name = name;
  s.reduction = reduction;
  s.initial = initial.detach().to(device_).clone();
  s.value = s.initial.clone();
  states_.push_back(std::move(s));
}

void internal::StatefulMetricFaults::inject_wrong_reduction(StatefulMetric& metric, const std::string& state,
                                                           Reduction wrong) {
  StatefulMetric::State& s = metric.find(state);
  if (s.reduction == Reduction::Gather || wrong == Reduction::Gather)
    throw std::logic_error(metric.name_ + ": state \"" + state + "\": a gather's reduction cannot be swapped");
  s.reduction = wrong;
}

StatefulMetric::State& StatefulMetric::find(const std::string& name) {
  for (State& s : states_) {
    if (s.name == name) return s;
  }
  throw std::logic_error(name_ + ": no state named \"" + name + "\"");
}

const StatefulMetric::State& StatefulMetric::find(const std::string& name) const {
  return const_cast<StatefulMetric*>(this)->find(name);
}

at::Tensor& StatefulMetric::state(const std::string& name) {
  State& s = find(name);
  if (s.reduction == Reduction::Gather) {
    throw std::logic_error(name_ + ": state \"" + name + "\" is a gather state: use append()");
  }
  return s.value;
}

const at::Tensor& StatefulMetric::state(const std::string& name) const {
  return const_cast<StatefulMetric*>(this)->state(name);
}

void StatefulMetric::append(const std::string& name, const at::Tensor& rows) {
  State& s = find(name);
  if (s.reduction != Reduction::Gather) {
    throw std::logic_error(name_ + ": state \"" + name + "\" is not a gather state");
  }
  if (rows.scalar_type() != s.initial.scalar_type() || rows.dim() != s.initial.dim() ||
      !rows.sizes().slice(1).equals(s.initial.sizes().slice(1))) {
    throw std::logic_error(name_ + ": rows for gather state \"" + name + "\" must be " +
                           checks::dtype_name(s.initial.scalar_type()) + " rows of shape " +
                           checks::shape_string(s.initial.sizes().slice(1)) + ", got " + checks::describe(rows));
  }
  if (rows.size(0) > 0) s.chunks.push_back(rows.detach().to(device_).clone());
}

void StatefulMetric::append(const std::string& name, at::Tensor&& rows) {
  // Sole owner: no other handle to this tensor, no view of its storage, nothing to detach from.
  const bool sole_owner = rows.defined() && rows.dim() >= 1 && rows.use_count() == 1 && rows.storage().use_count() == 1 &&
                          !rows.requires_grad() && rows.device() == device_;
  const at::Tensor& view = rows;
  if (!sole_owner) return append(name, view);
  append(name, view.narrow(0, 0, 0));  // validates the dtype and row shape, appends nothing
  if (rows.size(0) > 0) find(name).chunks.push_back(std::move(rows));
}

at::Tensor StatefulMetric::reserve_rows(const std::string& name, std::int64_t n) {
  State& s = find(name);
  if (s.reduction != Reduction::Gather) {
    throw std::logic_error(name_ + ": state \"" + name + "\" is not a gather state");
  }
  if (n < 0) throw std::logic_error(name_ + ": reserve_rows(\"" + name + "\", " + std::to_string(n) + ")");
  // Rows never straddle two blocks: a batch that does not fit the current block goes to the next
  // one that holds it (the next epoch finds the same blocks, so its batches fit as before).
  while (s.block < s.blocks.size() && s.blocks[s.block].size(0) - s.filled < n) {
    ++s.block;
    s.filled = 0;
  }
  if (s.block == s.blocks.size()) {
    std::int64_t capacity = 0;
    for (const at::Tensor& b : s.blocks) capacity += b.size(0);
    std::vector<std::int64_t> shape = s.initial.sizes().vec();
    shape[0] = std::max<std::int64_t>({n, capacity, 1024});  // doubles the capacity
    s.blocks.push_back(at::empty(shape, s.initial.options()));
    s.filled = 0;
  }
  return s.blocks[s.block].narrow(0, s.filled, n);
}

void StatefulMetric::commit_rows(const std::string& name, const at::Tensor& reserved) {
  State& s = find(name);
  if (reserved.defined() && reserved.dim() >= 1 && reserved.size(0) == 0) return;  // nothing to append (no data pointer to check)
  const bool last_reserved = s.block < s.blocks.size() && reserved.defined() && reserved.dim() >= 1 &&
                             reserved.data_ptr() == static_cast<char*>(s.blocks[s.block].data_ptr()) +
                                                        s.filled * s.blocks[s.block].stride(0) * reserved.element_size();
  if (!last_reserved) {
    throw std::logic_error(name_ + ": commit_rows(\"" + name + "\") takes the rows reserve_rows() handed out last");
  }
  s.chunks.push_back(reserved);
  s.filled += reserved.size(0);
}

at::Tensor StatefulMetric::gathered_locally(const std::string& name) const {
  const State& s = find(name);
  if (s.reduction != Reduction::Gather) {
    throw std::logic_error(name_ + ": state \"" + name + "\" is not a gather state");
  }
  if (s.chunks.empty()) return s.initial.clone();
  return at::cat(s.chunks, 0);
}

void StatefulMetric::reset() {
  for (State& s : states_) {
    s.value = s.initial.clone();
    s.chunks.clear();  // the blocks stay: the next epoch's rows go where this one's were
    s.block = 0;
    s.filled = 0;
  }
}

void StatefulMetric::update(const Batch& batch) {
  // A tensor already on the metric's device is passed as it is (not even a dispatched no-op `to`).
  auto on_device = [this](const at::Tensor& t) { return !t.defined() || t.device() == device_ ? t : t.to(device_); };
  Batch local;
  local.input = on_device(batch.input);
  local.target = on_device(batch.target);
  local.weight = on_device(batch.weight);
  update_state(local);
}

Value StatefulMetric::compute() { return compute_from(sync()); }

void StatefulMetric::to(c10::Device device) {
  device_ = device;
  for (State& s : states_) {
    s.initial = s.initial.to(device);
    s.value = s.value.to(device);
    for (at::Tensor& chunk : s.chunks) chunk = chunk.to(device);
    if (!s.blocks.empty()) {
      for (at::Tensor& chunk : s.chunks) chunk = chunk.clone();  // no longer views of the old device's blocks
      s.blocks.clear();
      s.block = 0;
      s.filled = 0;
    }
  }
}

std::vector<std::vector<std::string>> StatefulMetric::sync_phases() const {
  std::vector<std::string> all;
  for (const State& s : states_) all.push_back(s.name);
  return {all};
}

StateValues StatefulMetric::sync() const {
  StateValues synced;
  const auto phases = sync_phases();
  for (std::size_t p = 0; p < phases.size(); ++p) {
    synced.merge(sync_states(phases[p]));
    check_phase(p, synced);
  }
  return synced;
}

StateValues StatefulMetric::sync_states(const std::vector<std::string>& names) const {
  StateValues out;
  // Non-gather states: one all_reduce per reduction (the communicator coalesces per dtype).
  for (Reduction reduction : kReduceOrder) {
    std::vector<std::string> group;
    std::vector<at::Tensor> copies;
    for (const std::string& name : names) {
      const State& s = find(name);
      if (s.reduction != reduction) continue;
      group.push_back(name);
      // The communicator returns new tensors and never writes to what it is given: no copy for it.
      copies.push_back(comm_ != nullptr ? s.value : s.value.clone());
    }
    if (group.empty()) continue;
    if (comm_ != nullptr) comm_->all_reduce(copies, reduce_op(reduction));
    for (std::size_t i = 0; i < group.size(); ++i) out.set(group[i], copies[i].to(device_));
  }
  // Gather states: one coalesced all_gather for all of them.
  std::vector<std::string> gathered;
  std::vector<at::Tensor> local;
  for (const std::string& name : names) {
    if (find(name).reduction != Reduction::Gather) continue;
    gathered.push_back(name);
    const State& s = find(name);
    // The communicator only reads what it is given: rows that lie in order in the first block (or
    // one chunk) go as they are, without a concatenation.
    std::int64_t rows = 0;
    for (const at::Tensor& chunk : s.chunks) rows += chunk.size(0);
    if (comm_ != nullptr && !s.chunks.empty() && s.block == 0 && rows == s.filled) {
      local.push_back(s.blocks.front().narrow(0, 0, s.filled));
    } else if (comm_ != nullptr && s.chunks.size() == 1) {
      local.push_back(s.chunks.front());
    } else {
      local.push_back(gathered_locally(name));
    }
  }
  if (!gathered.empty()) {
    if (comm_ == nullptr) {
      for (std::size_t i = 0; i < gathered.size(); ++i) out.set(gathered[i], local[i]);
    } else {
      const auto per_rank = comm_->all_gather(local);
      for (std::size_t i = 0; i < gathered.size(); ++i) {
        // The parts are views of the communicator's receive buffer: the concatenation is the one
        // copy, and the synced value owns its memory.
        std::vector<at::Tensor> parts;
        for (const at::Tensor& part : per_rank[i]) parts.push_back(part.to(device_));
        out.set(gathered[i], at::cat(parts, 0));
      }
    }
  }
  return out;
}

std::vector<std::string> StatefulMetric::sync_plan() const {
  std::vector<std::string> plan;
  for (const auto& phase : sync_phases()) {
    for (Reduction reduction : kReduceOrder) {
      std::set<at::ScalarType> dtypes;  // the communicator issues dtypes in ScalarType order
      for (const std::string& name : phase) {
        const State& s = find(name);
        if (s.reduction == reduction) dtypes.insert(s.value.scalar_type());
      }
      for (at::ScalarType dtype : dtypes) {
        plan.push_back(std::string("all_reduce(") + to_string(reduction) + ") " + checks::dtype_name(dtype));
      }
    }
    std::set<at::ScalarType> gather_dtypes;
    for (const std::string& name : phase) {
      const State& s = find(name);
      if (s.reduction == Reduction::Gather) gather_dtypes.insert(s.initial.scalar_type());
    }
    if (!gather_dtypes.empty()) plan.push_back("all_gather(shapes) int64");
    // One gather of every gather state's bytes: named by its dtype when they share one.
    if (gather_dtypes.size() == 1) plan.push_back("all_gather " + checks::dtype_name(*gather_dtypes.begin()));
    if (gather_dtypes.size() > 1) plan.push_back("all_gather uint8");
  }
  return plan;
}

std::vector<StateInfo> StatefulMetric::states() const {
  std::vector<StateInfo> out;
  for (const State& s : states_) {
    std::vector<std::int64_t> shape = s.initial.sizes().vec();
    if (s.reduction == Reduction::Gather) shape.erase(shape.begin());
    out.push_back({s.name, s.reduction, s.initial.scalar_type(), shape});
  }
  return out;
}

std::string StatefulMetric::state_digest() const {
  Fnv1a hash;
  for (const State& s : states_) {
    const at::Tensor value =
        (s.reduction == Reduction::Gather ? gathered_locally(s.name) : s.value).to(at::kCPU).contiguous();
    hash.add(s.name);
    hash.add(checks::dtype_name(value.scalar_type()));
    hash.add(checks::shape_string(value.sizes()));
    hash.add(value.data_ptr(), value.numel() * value.element_size());
  }
  return hash.hex();
}

std::string pack_states(const std::map<std::string, at::Tensor>& states) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, value] : states) dict.insert(name, value.detach().to(at::kCPU).contiguous());
  const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(dict));
  return std::string(bytes.begin(), bytes.end());
}

std::map<std::string, at::Tensor> unpack_states(const std::string& saved) {
  c10::IValue value;
  try {
    value = torch::jit::pickle_load(std::vector<char>(saved.begin(), saved.end()));
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("a saved state that cannot be read: ") + e.what());
  }
  if (!value.isGenericDict()) throw std::invalid_argument("a saved state must be a dict of name to tensor");
  std::map<std::string, at::Tensor> out;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isTensor())
      throw std::invalid_argument("a saved state must be a dict of name to tensor");
    out[entry.key().toStringRef()] = entry.value().toTensor();
  }
  return out;
}

std::optional<std::string> StatefulMetric::save_state() const {
  std::map<std::string, at::Tensor> out;
  for (const State& s : states_) out[s.name] = s.reduction == Reduction::Gather ? gathered_locally(s.name) : s.value;
  return pack_states(out);
}

namespace {

// The saved states, checked against the declared ones: the same names, dtypes, and row shapes
// for gathers (a non-gather state may change its shape: RunningAverage's per-step history).
std::map<std::string, at::Tensor> checked_states(const std::string& metric, const std::string& saved,
                                                 const std::vector<StateInfo>& declared) {
  auto values = unpack_states(saved);
  for (const StateInfo& info : declared) {
    auto it = values.find(info.name);
    if (it == values.end())
      throw std::invalid_argument(metric + ": load_state: the saved state has no \"" + info.name + "\"");
    const at::Tensor& v = it->second;
    const bool rows_fit = info.reduction != Reduction::Gather ||
                          (v.dim() >= 1 && v.sizes().slice(1).vec() == info.shape);
    if (v.scalar_type() != info.dtype || !rows_fit)
      throw std::invalid_argument(metric + ": load_state: state \"" + info.name + "\" is " + checks::describe(v) +
                                  ", declared " + checks::dtype_name(info.dtype));
  }
  if (values.size() != declared.size())
    throw std::invalid_argument(metric + ": load_state: the saved state holds " + std::to_string(values.size()) +
                                " entries, the metric declares " + std::to_string(declared.size()));
  return values;
}

}  // namespace

void StatefulMetric::load_state(const std::string& saved) {
  auto values = checked_states(name_, saved, states());
  for (State& s : states_) {
    at::Tensor v = values.at(s.name).to(device_).clone();
    s.chunks.clear();
    if (s.reduction == Reduction::Gather) {
      if (v.size(0) > 0) s.chunks.push_back(std::move(v));
    } else {
      s.value = std::move(v);
    }
  }
}

void StatefulMetric::merge_state(const std::vector<std::string>& others_saved) {
  std::vector<std::map<std::string, at::Tensor>> others;
  for (const auto& saved : others_saved) others.push_back(checked_states(name_, saved, states()));
  for (State& s : states_) {
    for (const auto& other : others) {
      const at::Tensor v = other.at(s.name).to(device_);
      switch (s.reduction) {
        case Reduction::Sum: s.value = s.value + v; break;
        case Reduction::Max: s.value = at::maximum(s.value, v); break;
        case Reduction::Min: s.value = at::minimum(s.value, v); break;
        case Reduction::Prod: s.value = s.value * v; break;
        case Reduction::Gather:
          if (v.size(0) > 0) s.chunks.push_back(v.clone());
          break;
      }
    }
  }
}

}  // namespace distmetrics::metrics
