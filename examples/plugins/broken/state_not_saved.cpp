// BROKEN ON PURPOSE: a MeanAbsoluteError whose saved state leaves out its count.
//
// Bug class: a state that is not part of the saved state, as torchmetrics' states registered
// with persistent=False are left out of state_dict(): a run resumed from a checkpoint, or states
// merged from several processes, silently keep only part of what was counted. Its compute() and
// sync are right, so every other property passes.
// `distmetrics conform` flags: state_roundtrip (the twin restored before the first compute has
// counted nothing, and raises "no samples" where the original gives the mean) and merge_state
// (the merged instance has the summed errors but no count), with state_roundtrip as the cause.
#include <distmetrics/plugin/plugin.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../common/mean_absolute_error_state.h"

namespace {

using namespace distmetrics::metrics;

class StateNotSavedMeanAbsoluteError final : public example_plugins::MeanAbsoluteErrorState {
 public:
  Value compute() override {
    std::vector<at::Tensor> totals{error_sum_.clone(), elements_.clone()};
    if (comm_) comm_->all_reduce(totals, distmetrics::runtime::ReduceOp::Sum);
    const auto elements = totals[1].item<std::int64_t>();
    if (elements == 0) throw NotComputableError(name(), "no samples on any rank");
    return totals[0].item<double>() / static_cast<double>(elements);
  }

  // BUG: only the sum is saved; the count is treated as not worth keeping.
  std::optional<std::string> save_state() const override { return pack_states({{"error_sum", error_sum_}}); }
  void load_state(const std::string& saved) override {
    error_sum_ = unpack_states(saved).at("error_sum").to(device_).clone();
  }
  bool can_merge_state() const override { return true; }
  void merge_state(const std::vector<std::string>& others_saved) override {
    for (const std::string& saved : others_saved) error_sum_ = error_sum_ + unpack_states(saved).at("error_sum").to(device_);
  }
};

}  // namespace

DISTMETRICS_PLUGIN("example_state_not_saved", "1.0.0") {
  registry.add({"MeanAbsoluteError", "regression", "BROKEN: its saved state leaves out the count", {},
                [](const nlohmann::json&) { return std::make_unique<StateNotSavedMeanAbsoluteError>(); }});
}
