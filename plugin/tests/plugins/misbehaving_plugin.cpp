// A plugin whose metrics misbehave in the ways a conformance run must survive and report on the
// variant, then go on: each registers under a reference metric's name, so the scenarios of that
// metric run it.
//   MeanAbsoluteError     rank 1 throws a plain std::runtime_error in update(), and
//                         leaves rank 0 alone in the all_reduce of compute()       -> hang
//   MeanSquaredError      dereferences its communicator even when it has none: it crashes in
//                         the single-process run only (every distributed rank has one) -> error
//   RootMeanSquaredError  rank 1 dies of SIGSEGV in compute()                        -> crash
//   MaximumAbsoluteError  returns a tensor where the reference returns a number      -> fail
//   R2Score               rank 0 never returns from compute()                         -> hang
//   PearsonCorrelation    rank 1 asks for 64 GiB in its second update (a mean of |e|), far past
//                         any --rank-memory a test gives                              -> memory_exceeded
// Every one is otherwise right (a correctly synced mean of |e| or e^2), so nothing else fails.
#include <ATen/ATen.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <thread>

#include "distmetrics/plugin/plugin.h"

namespace {

using distmetrics::runtime::Communicator;
using distmetrics::runtime::ReduceOp;
using namespace distmetrics::metrics;

enum class Fault { ThrowInUpdate, NeedsCommunicator, SegfaultInCompute, WrongType, HangInCompute, AllocatesTooMuch };

class Misbehaving final : public Metric {
 public:
  Misbehaving(std::string name, Fault fault, bool squared) : name_(std::move(name)), fault_(fault), squared_(squared) {
    reset();
  }
  std::string name() const override { return name_; }
  void reset() override {
    sum_ = at::zeros({}, at::kDouble);
    count_ = at::zeros({}, at::kLong);
  }
  void update(const Batch& batch) override {
    if (fault_ == Fault::ThrowInUpdate && comm_ && comm_->rank() == 1)
      throw std::runtime_error("misbehaving plugin: update() gave up on rank 1");
    if (fault_ == Fault::AllocatesTooMuch && comm_ && comm_->rank() == 1 && ++updates_ == 2)
      scratch_ = at::empty({std::int64_t{64} << 30}, at::kByte);  // untouched: costs nothing where it succeeds
    const at::Tensor e = batch.input.to(at::kCPU, at::kDouble) - batch.target.to(at::kCPU, at::kDouble);
    sum_ += squared_ ? (e * e).sum() : e.abs().sum();
    count_ += e.numel();
  }
  Value compute() override {
    if (fault_ == Fault::SegfaultInCompute && comm_ && comm_->rank() == 1) std::raise(SIGSEGV);
    if (fault_ == Fault::HangInCompute && (!comm_ || comm_->rank() == 0))
      while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
    std::vector<at::Tensor> totals{sum_.clone(), count_.clone()};
    if (fault_ == Fault::NeedsCommunicator) {
      Communicator* volatile comm = comm_;
      if (!comm) std::raise(SIGSEGV);  // what dereferencing the null communicator would do, made certain
      comm->all_reduce(totals, ReduceOp::Sum);
    } else if (comm_) {
      comm_->all_reduce(totals, ReduceOp::Sum);
    }
    const auto n = totals[1].item<std::int64_t>();
    if (n == 0) throw NotComputableError(name_, "no samples on any rank");
    const double mean = totals[0].item<double>() / static_cast<double>(n);
    if (fault_ == Fault::WrongType) return at::full({1}, mean, at::kFloat);
    return squared_ && name_ == "RootMeanSquaredError" ? std::sqrt(mean) : mean;
  }
  void set_communicator(Communicator* comm) override { comm_ = comm; }
  void to(c10::Device device) override {}
  c10::Device device() const override { return c10::kCPU; }

 private:
  std::string name_;
  Fault fault_;
  bool squared_;
  Communicator* comm_ = nullptr;
  at::Tensor sum_, count_;
  int updates_ = 0;
  at::Tensor scratch_;
};

MetricSpec spec(const std::string& name, Fault fault, bool squared) {
  MetricSpec s;
  s.name = name;
  s.family = "regression";
  s.description = "misbehaving on purpose (distmetrics' own tests)";
  // Accepts the reference's parameter so that scenarios that set it still run this metric.
  s.params = {{"sum_dtype", "string", "ignored", "float64", {"float64", "float32"}}};
  s.make = [name, fault, squared](const nlohmann::json&) { return std::make_unique<Misbehaving>(name, fault, squared); };
  return s;
}

}  // namespace

DISTMETRICS_PLUGIN("misbehaving_test_plugin", "0.0.1") {
  registry.add(spec("MeanAbsoluteError", Fault::ThrowInUpdate, false));
  registry.add(spec("MeanSquaredError", Fault::NeedsCommunicator, true));
  registry.add(spec("RootMeanSquaredError", Fault::SegfaultInCompute, true));
  registry.add(spec("MaximumAbsoluteError", Fault::WrongType, false));
  registry.add(spec("R2Score", Fault::HangInCompute, false));
  registry.add(spec("PearsonCorrelation", Fault::AllocatesTooMuch, false));
}
