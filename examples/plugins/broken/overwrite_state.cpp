// BROKEN ON PURPOSE: a MeanAbsoluteError whose sync overwrites the local state.
//
// Bug class: PyTorch-Ignite #2803. compute() all-reduces the state tensors themselves instead of
// copies, so after a compute every rank holds the global sums; the updates that follow add to
// already-reduced values, and the next compute reduces them again. The first compute is right.
// `distmetrics conform` flags: update_after_compute (and idempotent: compute() changes the local
// state digest; reset_replay and agrees_with_reference), on every variant with more than one
// rank. equal_to_single holds: the first compute is right.
#include <distmetrics/plugin/plugin.h>

#include <memory>

#include "../common/mean_absolute_error_state.h"

namespace {

using namespace distmetrics::metrics;

class OverwritingMeanAbsoluteError final : public example_plugins::MeanAbsoluteErrorState {
 public:
  Value compute() override {
    if (comm_) {
      // BUG: the reduced values are written back into the state: the local sums become the
      // global sums.
      std::vector<at::Tensor> state{error_sum_, elements_};
      comm_->all_reduce(state, distmetrics::runtime::ReduceOp::Sum);
      error_sum_ = state[0];
      elements_ = state[1];
    }
    const auto elements = elements_.item<std::int64_t>();
    if (elements == 0) throw NotComputableError(name(), "no samples on any rank");
    return error_sum_.item<double>() / static_cast<double>(elements);
  }
};

}  // namespace

DISTMETRICS_PLUGIN("example_overwrite_state", "1.0.0") {
  registry.add({"MeanAbsoluteError", "regression", "BROKEN: the sync overwrites local state", {},
                [](const nlohmann::json&) { return std::make_unique<OverwritingMeanAbsoluteError>(); }});
}
