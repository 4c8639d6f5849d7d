// A plugin for the verdicts' own tests (distmetrics' tests only):
//   Accuracy           the reference implementation itself, registered as a plugin's: correct by
//                      construction, so any verdict against it that is not a pass is a false
//                      positive (e.g. on an [expect] fail scenario, PyTorch #25162)
//   MeanAbsoluteError  syncs with its own c10d calls on the Gloo process group; rank 1 raises
//                      NotComputableError alone in compute() while rank 0 waits in the raw
//                      allreduce until its wait times out: a hang to blame on rank 1
//   MeanSquaredError   syncs through the communicator; in its first compute at world size > 1,
//                      rank 1 issues a barrier after the sync that rank 0 never issues: at world
//                      size 2 an even split, which the single-process run tells apart (rank 1)
#include <ATen/ATen.h>

#include <chrono>
#include <memory>
#include <stdexcept>

#include "distmetrics/plugin/plugin.h"
#include "distmetrics/plugin/process_group.h"

namespace {

using namespace distmetrics::metrics;

class RawC10dRaisesAlone final : public Metric {
 public:
  RawC10dRaisesAlone() { reset(); }
  std::string name() const override { return "MeanAbsoluteError"; }
  void reset() override {
    sum_ = at::zeros({1}, at::kDouble);
    count_ = at::zeros({1}, at::kDouble);
  }
  void update(const Batch& batch) override {
    const at::Tensor e = batch.input.to(at::kCPU, at::kDouble) - batch.target.to(at::kCPU, at::kDouble);
    sum_ += e.abs().sum();
    count_ += static_cast<double>(e.numel());
  }
  Value compute() override {
    at::Tensor totals = at::cat({sum_, count_});
    if (comm_ && comm_->world_size() > 1) {
      // BUG: decided on one rank only, while the others go on to the allreduce.
      if (comm_->rank() == 1) throw NotComputableError(name(), "rank 1 gives up alone");
      auto group = distmetrics::plugin::gloo_process_group(*comm_);
      if (!group) throw std::runtime_error("this test metric needs the gloo backend");
      std::vector<at::Tensor> tensors{totals};
      auto work = group->allreduce(tensors);
      const auto timeout = std::chrono::milliseconds(comm_->op_timeout());
      if (!work->wait(timeout)) throw std::runtime_error("allreduce timed out");
    }
    if (totals[1].item<double>() == 0) throw NotComputableError(name(), "no samples on any rank");
    return totals[0].item<double>() / totals[1].item<double>();
  }
  void set_communicator(distmetrics::runtime::Communicator* comm) override { comm_ = comm; }
  void to(c10::Device) override {}
  c10::Device device() const override { return c10::kCPU; }

 private:
  distmetrics::runtime::Communicator* comm_ = nullptr;
  at::Tensor sum_, count_;
};

class ExtraBarrierOnRank1 final : public Metric {
 public:
  ExtraBarrierOnRank1() { reset(); }
  std::string name() const override { return "MeanSquaredError"; }
  void reset() override { totals_ = at::zeros({2}, at::kDouble); }
  void update(const Batch& batch) override {
    const at::Tensor e = batch.input.to(at::kCPU, at::kDouble) - batch.target.to(at::kCPU, at::kDouble);
    totals_[0] += (e * e).sum();
    totals_[1] += static_cast<double>(e.numel());
  }
  Value compute() override {
    at::Tensor totals = totals_.clone();
    if (comm_) {
      totals = comm_->all_reduce_copy(totals, distmetrics::runtime::ReduceOp::Sum);
      // BUG: one rank only, once.
      if (comm_->world_size() > 1 && comm_->rank() == 1 && computes_++ == 0) comm_->barrier();
    }
    if (totals[1].item<double>() == 0) throw NotComputableError(name(), "no samples on any rank");
    return totals[0].item<double>() / totals[1].item<double>();
  }
  void set_communicator(distmetrics::runtime::Communicator* comm) override { comm_ = comm; }
  void to(c10::Device) override {}
  c10::Device device() const override { return c10::kCPU; }

 private:
  distmetrics::runtime::Communicator* comm_ = nullptr;
  at::Tensor totals_;
  int computes_ = 0;
};

}  // namespace

DISTMETRICS_PLUGIN("verdict_test_plugin", "0.0.1") {
  const auto* accuracy = MetricRegistry::reference().find("Accuracy");
  if (!accuracy) throw std::runtime_error("the reference registry has no Accuracy");
  registry.add(*accuracy);
  MetricSpec mae;
  mae.name = "MeanAbsoluteError";
  mae.family = "regression";
  mae.description = "raises alone on rank 1 while rank 0 waits in a raw c10d allreduce (distmetrics' own tests)";
  mae.params = {{"sum_dtype", "string", "ignored", "float64", {"float64", "float32"}}};
  mae.make = [](const nlohmann::json&) { return std::make_unique<RawC10dRaisesAlone>(); };
  registry.add(mae);
  MetricSpec mse;
  mse.name = "MeanSquaredError";
  mse.family = "regression";
  mse.description = "rank 1 issues a barrier its peers never issue in its first compute (distmetrics' own tests)";
  mse.params = {{"sum_dtype", "string", "ignored", "float64", {"float64", "float32"}}};
  mse.make = [](const nlohmann::json&) { return std::make_unique<ExtraBarrierOnRank1>(); };
  registry.add(mse);
}
