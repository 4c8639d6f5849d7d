// BROKEN ON PURPOSE: a MeanAbsoluteError that raises "not computable" on a rank with no data,
// before it syncs.
//
// Bug class: PyTorch-Ignite #1242. The check "no samples" looks at the LOCAL count, so a rank
// whose shard is empty raises alone and leaves the script, while its peers wait for it in the
// all_reduce until their deadline. The check belongs after the sync, on the global count.
// `distmetrics conform` reports: a hang on every variant where a rank has no data (the
// empty_rank shard), blamed on that rank (the last one); the other variants pass.
#include <distmetrics/plugin/digest.h>
#include <distmetrics/plugin/plugin.h>

#include <ATen/ATen.h>

#include <memory>

#include "../common/regression_inputs.h"

namespace {

using namespace distmetrics::metrics;

class RaisingAloneMeanAbsoluteError final : public Metric {
 public:
  RaisingAloneMeanAbsoluteError() { reset(); }
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
    // BUG: decided from the local count; peers are about to wait in the all_reduce below.
    if (elements_.item<std::int64_t>() == 0) throw NotComputableError(name(), "no samples on this rank");
    std::vector<at::Tensor> totals{error_sum_.clone(), elements_.clone()};
    if (comm_) comm_->all_reduce(totals, distmetrics::harness::ReduceOp::Sum);
    return totals[0].item<double>() / static_cast<double>(totals[1].item<std::int64_t>());
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
  distmetrics::harness::Communicator* comm_ = nullptr;
  at::Tensor error_sum_, elements_;
};

}  // namespace

DISTMETRICS_PLUGIN("example_raises_alone", "1.0.0") {
  registry.add({"MeanAbsoluteError", "regression", "BROKEN: raises alone on a rank with no data", {},
                [](const nlohmann::json&) { return std::make_unique<RaisingAloneMeanAbsoluteError>(); }});
}
