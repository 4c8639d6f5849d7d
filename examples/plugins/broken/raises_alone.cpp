// BROKEN ON PURPOSE: a MeanAbsoluteError that raises "not computable" on a rank with no data,
// before it syncs.
//
// Bug class: PyTorch-Ignite #1242. The check "no samples" looks at the LOCAL count, so a rank
// whose shard is empty raises alone and leaves the script, while its peers wait for it in the
// all_reduce until their deadline. The check belongs after the sync, on the global count.
// `distmetrics conform` reports: a hang on every variant where a rank has no data (the
// empty_rank shard), blamed on that rank (the last one); the other variants pass.
#include <distmetrics/plugin/plugin.h>

#include <memory>

#include "../common/mean_absolute_error_state.h"

namespace {

using namespace distmetrics::metrics;

class RaisingAloneMeanAbsoluteError final : public example_plugins::MeanAbsoluteErrorState {
 public:
  Value compute() override {
    // BUG: decided from the local count; peers are about to wait in the all_reduce below.
    if (elements_.item<std::int64_t>() == 0) throw NotComputableError(name(), "no samples on this rank");
    std::vector<at::Tensor> totals{error_sum_.clone(), elements_.clone()};
    if (comm_) comm_->all_reduce(totals, distmetrics::runtime::ReduceOp::Sum);
    return totals[0].item<double>() / static_cast<double>(totals[1].item<std::int64_t>());
  }
};

}  // namespace

DISTMETRICS_PLUGIN("example_raises_alone", "1.0.0") {
  registry.add({"MeanAbsoluteError", "regression", "BROKEN: raises alone on a rank with no data", {},
                [](const nlohmann::json&) { return std::make_unique<RaisingAloneMeanAbsoluteError>(); }});
}
