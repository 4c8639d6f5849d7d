// BROKEN ON PURPOSE: a MeanAbsoluteError that never syncs.
//
// Bug class: no sync at all. compute() returns the mean of this rank's shard only: right on one
// process, wrong on N ranks, and different on every rank.
// `distmetrics conform` flags: equal_to_single, ranks_agree, update_after_compute and
// agrees_with_reference on every variant with more than one rank; with the empty_rank shard the
// empty rank raises "no samples" while its peers return (an error). World size 1 passes.
#include <distmetrics/plugin/digest.h>
#include <distmetrics/plugin/plugin.h>

#include <ATen/ATen.h>

#include <memory>

#include "../common/regression_inputs.h"

namespace {

using namespace distmetrics::metrics;

class NoSyncMeanAbsoluteError final : public Metric {
 public:
  NoSyncMeanAbsoluteError() { reset(); }
  std::string name() const override { return "MeanAbsoluteError"; }
  void reset() override {
    error_sum_ = at::zeros({}, at::TensorOptions().device(device_).dtype(at::kDouble));
    elements_ = at::zeros({}, at::TensorOptions().device(device_).dtype(at::kLong));
  }
  void update(const Batch& batch) override {
    const at::Tensor errors = example_plugins::absolute_errors(name(), batch, device_);
    error_sum_ += errors.sum();
    elements_ += errors.numel();
  }
  Value compute() override {
    // BUG: the communicator is never used; this is the local mean.
    const auto elements = elements_.item<std::int64_t>();
    if (elements == 0) throw NotComputableError(name(), "no samples");
    return error_sum_.item<double>() / static_cast<double>(elements);
  }
  void set_communicator(distmetrics::harness::Communicator* comm) override { comm_ = comm; }
  void to(c10::Device device) override {
    device_ = device;
    error_sum_ = error_sum_.to(device);
    elements_ = elements_.to(device);
  }
  c10::Device device() const override { return device_; }
  std::string state_digest() const override { return distmetrics::plugin::tensor_digest({error_sum_, elements_}); }

 private:
  c10::Device device_{c10::kCPU};
  distmetrics::harness::Communicator* comm_ = nullptr;  // kept, never used
  at::Tensor error_sum_, elements_;
};

}  // namespace

DISTMETRICS_PLUGIN("example_no_sync", "1.0.0") {
  registry.add({"MeanAbsoluteError", "regression", "BROKEN: never syncs", {},
                [](const nlohmann::json&) { return std::make_unique<NoSyncMeanAbsoluteError>(); }});
}
