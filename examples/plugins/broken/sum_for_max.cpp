// BROKEN ON PURPOSE: a MaximumAbsoluteError that reduces its maximum with SUM.
//
// Bug class: PyTorch-Ignite #1813 (fixed in PR #1823): every state was all-reduced with SUM,
// where a maximum needs MAX. On N ranks the result is the sum of the ranks' maxima (and -inf
// as soon as one rank has no data).
// `distmetrics conform` flags: equal_to_single (and agrees_with_reference, update_after_compute,
// reset_replay, which compare the same wrong value), on every variant with more than one rank.
#include <distmetrics/plugin/digest.h>
#include <distmetrics/plugin/plugin.h>

#include <ATen/ATen.h>

#include <limits>
#include <memory>

#include "../common/regression_inputs.h"

namespace {

using namespace distmetrics::metrics;

class SummedMaximumAbsoluteError final : public Metric {
 public:
  SummedMaximumAbsoluteError() { reset(); }
  std::string name() const override { return "MaximumAbsoluteError"; }
  void reset() override {
    largest_ = at::full({}, -std::numeric_limits<double>::infinity(), at::TensorOptions().device(device_).dtype(at::kDouble));
    elements_ = at::zeros({}, at::TensorOptions().device(device_).dtype(at::kLong));
  }
  void update(const Batch& batch) override {
    const at::Tensor errors = example_plugins::absolute_errors(name(), batch, device_);
    if (errors.numel() > 0) largest_ = at::maximum(largest_, errors.max());
    elements_ += errors.numel();
  }
  Value compute() override {
    std::vector<at::Tensor> totals{largest_.clone(), elements_.clone()};
    // BUG: one reduction for every state, SUM: right for the count, wrong for the maximum.
    if (comm_) comm_->all_reduce(totals, distmetrics::runtime::ReduceOp::Sum);
    if (totals[1].item<std::int64_t>() == 0) throw NotComputableError(name(), "no samples on any rank");
    return totals[0].item<double>();
  }
  void set_communicator(distmetrics::runtime::Communicator* comm) override { comm_ = comm; }
  void to(c10::Device device) override {
    device_ = device;
    largest_ = largest_.to(device);
    elements_ = elements_.to(device);
  }
  c10::Device device() const override { return device_; }
  std::string state_digest() const override { return distmetrics::plugin::tensor_digest({largest_, elements_}); }

 private:
  c10::Device device_{c10::kCPU};
  distmetrics::runtime::Communicator* comm_ = nullptr;
  at::Tensor largest_, elements_;
};

}  // namespace

DISTMETRICS_PLUGIN("example_sum_for_max", "1.0.0") {
  registry.add({"MaximumAbsoluteError", "regression", "BROKEN: reduces its maximum with SUM", {},
                [](const nlohmann::json&) { return std::make_unique<SummedMaximumAbsoluteError>(); }});
}
