// The state of a MeanAbsoluteError (sum of |errors| and their count), kept the right way: on the
// metric's device, updated locally, reset to zeros. The broken examples that are a
// MeanAbsoluteError derive from it and write only compute(), so that each file shows its bug and
// nothing else.
#pragma once

#include <distmetrics/plugin/digest.h>
#include <distmetrics/plugin/plugin.h>

#include <ATen/ATen.h>

#include <string>

#include "regression_inputs.h"

namespace example_plugins {

class MeanAbsoluteErrorState : public distmetrics::metrics::Metric {
 public:
  MeanAbsoluteErrorState() { reset(); }
  std::string name() const override { return "MeanAbsoluteError"; }
  void reset() override {
    error_sum_ = at::zeros({}, at::TensorOptions().device(device_).dtype(at::kDouble));
    elements_ = at::zeros({}, at::TensorOptions().device(device_).dtype(at::kLong));
  }
  void update(const distmetrics::metrics::Batch& batch) override {
    const at::Tensor errors = absolute_errors(name(), batch, device_);
    error_sum_ += errors.sum();
    elements_ += errors.numel();
  }
  void set_communicator(distmetrics::runtime::Communicator* comm) override { comm_ = comm; }
  void to(c10::Device device) override {
    device_ = device;
    error_sum_ = error_sum_.to(device);
    elements_ = elements_.to(device);
  }
  c10::Device device() const override { return device_; }
  std::string state_digest() const override { return distmetrics::plugin::tensor_digest({error_sum_, elements_}); }

 protected:
  c10::Device device_{c10::kCPU};
  distmetrics::runtime::Communicator* comm_ = nullptr;
  at::Tensor error_sum_, elements_;
};

}  // namespace example_plugins
