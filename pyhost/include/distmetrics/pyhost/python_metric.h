// PythonMetric: a metric written in Python (torchmetrics-, Ignite- or torcheval-style, or a
// plain callable), run unchanged through the C++ Metric interface inside a rank worker.
//
// - Tensors cross both ways without copies (THPVariable_Wrap / THPVariable_Unpack).
// - set_communicator() gives the rank's interpreter a fresh torch.distributed default group for
//   the variant (same backend, rank and world size, on the variant's store under a prefix of its
//   own), so the metric's own dist.all_reduce / all_gather_object / idist calls work as under
//   torchrun. The group stays until the next variant begins (as the C++ group stays until the
//   supervisor releases the variant: a rank that tore it down early would turn its peers' hang
//   into a failure).
// - Every torch.distributed collective enters the communicator's trace (op, dtype, shape), so hang
//   blame and desync diagnosis see Python collectives.
// - A Python exception becomes metrics::ForeignError with the Python type name, message and the
//   last frames; one raised while a traced collective was open (Gloo's timeout) becomes a
//   CollectiveError for that collective.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "distmetrics/metrics/metric.h"

namespace distmetrics::pyhost {

class PythonMetric final : public metrics::Metric {
 public:
  // `name`: the registered (unqualified) name; `params`: the scenario's parameters; `source`: the
  // canonical spec of the source that registered it (empty: whichever registered the name last).
  PythonMetric(std::string name, const nlohmann::json& params, std::string source = "");
  ~PythonMetric() override;

  std::string name() const override { return name_; }
  void reset() override;
  void update(const metrics::Batch& batch) override;
  metrics::Value compute() override;
  void set_communicator(runtime::Communicator* comm) override;
  void to(c10::Device device) override;
  c10::Device device() const override { return device_; }
  // From the metric's metric_state / state_dict() / named tensors; empty when it has none.
  std::string state_digest() const override;
  // The metric's state_dict(), torch.save'd; nullopt when it has no state_dict/load_state_dict.
  // load_state: load_state_dict(torch.load(...)).
  std::optional<std::string> save_state() const override;
  void load_state(const std::string& saved) override;
  // torcheval's merge_state(metrics), when the metric has it (and state_dict/load_state_dict):
  // each saved state goes into a fresh instance, and this one merges them. An instance without a
  // communicator computes alone: torch.distributed looks uninitialised to its compute(), so the
  // merging instance in a rank does not sync with the ranks' own.
  bool can_merge_state() const override;
  void merge_state(const std::vector<std::string>& others_saved) override;

 private:
  struct Impl;
  std::string name_;
  nlohmann::json params_;
  std::string source_;
  c10::Device device_{c10::kCPU};
  std::unique_ptr<Impl> impl_;
  runtime::Communicator* comm_ = nullptr;
};

}  // namespace distmetrics::pyhost
