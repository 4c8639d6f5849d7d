// A correct distmetrics plugin: MeanAbsoluteError and MaximumAbsoluteError, written from scratch
// on the plain Metric interface (no distmetrics base class). MeanAbsoluteError also saves, loads
// and merges its state (state_roundtrip, merge_state).
//
// How they sync, and why (docs/design.md, "Metric contract"):
// - update() changes local state only; it never communicates.
// - compute() reduces COPIES of the state, so that compute(); compute(); agree and the updates
//   that follow a compute are counted once (the bug of PyTorch-Ignite #2803).
// - A maximum is reduced with MAX, sums and counts with SUM (PyTorch-Ignite #1813).
// - "No samples" is decided from the synced count, so every rank raises together; a rank with
//   no data never raises alone (PyTorch-Ignite #1242).
// MaximumAbsoluteError makes its own c10d call on the Gloo process group when the variant runs
// on gloo, to show how; it uses the communicator's collectives otherwise (mpi, other devices).
#include <distmetrics/plugin/digest.h>
#include <distmetrics/plugin/plugin.h>
#include <distmetrics/plugin/process_group.h>

#include <ATen/ATen.h>

#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/regression_inputs.h"

namespace {

using distmetrics::runtime::Communicator;
using distmetrics::runtime::ReduceOp;
using distmetrics::metrics::Batch;
using distmetrics::metrics::Metric;
using distmetrics::metrics::NotComputableError;
using distmetrics::metrics::Value;

at::TensorOptions on(const c10::Device& device, at::ScalarType dtype) {
  return at::TensorOptions().device(device).dtype(dtype);
}

// mean |input - target| over every element. States: error_sum (float64), elements (int64).
class MeanAbsoluteError final : public Metric {
 public:
  MeanAbsoluteError() { reset(); }

  std::string name() const override { return "MeanAbsoluteError"; }

  void reset() override {
    error_sum_ = at::zeros({}, on(device_, at::kDouble));
    elements_ = at::zeros({}, on(device_, at::kLong));
  }

  void update(const Batch& batch) override {
    const at::Tensor errors = example_plugins::absolute_errors(name(), batch, device_);
    error_sum_ += errors.sum();
    elements_ += errors.numel();
  }

  Value compute() override {
    std::vector<at::Tensor> totals{error_sum_.clone(), elements_.clone()};  // copies: local state stays
    if (comm_) comm_->all_reduce(totals, ReduceOp::Sum);
    const auto elements = totals[1].item<std::int64_t>();
    if (elements == 0) throw NotComputableError(name(), "no samples on any rank");
    return totals[0].item<double>() / static_cast<double>(elements);
  }

  void set_communicator(Communicator* comm) override { comm_ = comm; }
  void to(c10::Device device) override {
    device_ = device;
    error_sum_ = error_sum_.to(device);
    elements_ = elements_.to(device);
  }
  c10::Device device() const override { return device_; }
  std::string state_digest() const override { return distmetrics::plugin::tensor_digest({error_sum_, elements_}); }

  // Optional: saving, loading and merging the local state, for the state_roundtrip and
  // merge_state properties (a checkpoint resumed mid-epoch; torcheval's merge_state). Every
  // state is saved (torchmetrics' non-persistent states are the bug these catch), and a merge
  // combines each state with the reduction compute() syncs it with: both are sums.
  std::optional<std::string> save_state() const override {
    return distmetrics::metrics::pack_states({{"error_sum", error_sum_}, {"elements", elements_}});
  }
  void load_state(const std::string& saved) override {
    const auto states = distmetrics::metrics::unpack_states(saved);
    error_sum_ = saved_state(states, "error_sum", at::kDouble).to(device_).clone();
    elements_ = saved_state(states, "elements", at::kLong).to(device_).clone();
  }
  bool can_merge_state() const override { return true; }
  void merge_state(const std::vector<std::string>& others_saved) override {
    for (const std::string& saved : others_saved) {
      const auto states = distmetrics::metrics::unpack_states(saved);
      error_sum_ = error_sum_ + saved_state(states, "error_sum", at::kDouble).to(device_);
      elements_ = elements_ + saved_state(states, "elements", at::kLong).to(device_);
    }
  }

 private:
  // One entry of a saved state, checked: a state saved by another metric is refused by name.
  at::Tensor saved_state(const std::map<std::string, at::Tensor>& states, const std::string& key,
                         at::ScalarType dtype) const {
    const auto it = states.find(key);
    if (it == states.end() || it->second.scalar_type() != dtype || it->second.dim() != 0)
      throw std::invalid_argument(name() + ": load_state: the saved state has no scalar " +
                                  std::string(c10::toString(dtype)) + " \"" + key + "\"");
    return it->second;
  }

  c10::Device device_{c10::kCPU};
  Communicator* comm_ = nullptr;
  at::Tensor error_sum_, elements_;
};

// max |input - target| over every element. States: largest (float64, starts at -inf), elements
// and nans (int64). NaNs are counted apart: a MAX reduction may keep or drop a NaN.
class MaximumAbsoluteError final : public Metric {
 public:
  MaximumAbsoluteError() { reset(); }

  std::string name() const override { return "MaximumAbsoluteError"; }

  void reset() override {
    largest_ = at::full({}, -std::numeric_limits<double>::infinity(), on(device_, at::kDouble));
    elements_ = at::zeros({}, on(device_, at::kLong));
    nans_ = at::zeros({}, on(device_, at::kLong));
  }

  void update(const Batch& batch) override {
    const at::Tensor errors = example_plugins::absolute_errors(name(), batch, device_);
    const at::Tensor nan = at::isnan(errors);
    if (errors.numel() > 0)
      largest_ = at::maximum(largest_, errors.masked_fill(nan, -std::numeric_limits<double>::infinity()).max());
    elements_ += errors.numel();
    nans_ += nan.sum();
  }

  Value compute() override {
    at::Tensor largest = largest_.clone().reshape({1});
    std::vector<at::Tensor> counts{elements_.clone(), nans_.clone()};
    if (comm_) {
      all_reduce_max(largest);
      comm_->all_reduce(counts, ReduceOp::Sum);
    }
    if (counts[0].item<std::int64_t>() == 0) throw NotComputableError(name(), "no samples on any rank");
    if (counts[1].item<std::int64_t>() > 0) return std::numeric_limits<double>::quiet_NaN();
    return largest.item<double>();
  }

  void set_communicator(Communicator* comm) override { comm_ = comm; }
  void to(c10::Device device) override {
    device_ = device;
    largest_ = largest_.to(device);
    elements_ = elements_.to(device);
    nans_ = nans_.to(device);
  }
  c10::Device device() const override { return device_; }
  std::string state_digest() const override {
    return distmetrics::plugin::tensor_digest({largest_, elements_, nans_});
  }

 private:
  // On gloo with a CPU tensor: c10d directly, waiting no longer than the harness's collective
  // deadline. Otherwise: the communicator.
  void all_reduce_max(at::Tensor& tensor) {
#if DISTMETRICS_HAVE_GLOO
    if (auto group = distmetrics::plugin::gloo_process_group(*comm_); group && tensor.device().is_cpu()) {
      std::vector<at::Tensor> tensors{tensor};
      c10d::AllreduceOptions options;
      options.reduceOp = c10d::ReduceOp(c10d::ReduceOp::MAX);
      options.timeout = comm_->op_timeout();
      auto work = group->allreduce(tensors, options);
      if (!work->wait(comm_->op_timeout()))
        throw std::runtime_error("MaximumAbsoluteError: gloo allreduce(max) did not finish in time on rank " +
                                 std::to_string(comm_->rank()));
      return;
    }
#endif
    std::vector<at::Tensor> tensors{tensor};
    comm_->all_reduce(tensors, ReduceOp::Max);  // replaces the vector's entries with the results
    tensor = tensors[0];
  }

  c10::Device device_{c10::kCPU};
  Communicator* comm_ = nullptr;
  at::Tensor largest_, elements_, nans_;
};

}  // namespace

DISTMETRICS_PLUGIN("example_regression_metrics", "1.0.0") {
  registry.add({"MeanAbsoluteError", "regression", "mean |input - target|; input and target float [N, *]", {},
                [](const nlohmann::json&) { return std::make_unique<MeanAbsoluteError>(); }});
  registry.add({"MaximumAbsoluteError", "regression", "max |input - target|; input and target float [N, *]", {},
                [](const nlohmann::json&) { return std::make_unique<MaximumAbsoluteError>(); }});
}
