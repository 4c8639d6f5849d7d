// BROKEN ON PURPOSE: a MeanAbsoluteError that never syncs.
//
// Bug class: no sync at all. compute() returns the mean of this rank's shard only: right on one
// process, wrong on N ranks, and different on every rank.
// `distmetrics conform` flags: equal_to_single, ranks_agree, update_after_compute and
// agrees_with_reference on every variant with more than one rank; with the empty_rank shard the
// empty rank raises "no samples" while its peers return (an error). World size 1 passes.
#include <distmetrics/plugin/plugin.h>

#include <memory>

#include "../common/mean_absolute_error_state.h"

namespace {

using namespace distmetrics::metrics;

class NoSyncMeanAbsoluteError final : public example_plugins::MeanAbsoluteErrorState {
 public:
  Value compute() override {
    // BUG: the communicator is never used; this is the local mean.
    const auto elements = elements_.item<std::int64_t>();
    if (elements == 0) throw NotComputableError(name(), "no samples");
    return error_sum_.item<double>() / static_cast<double>(elements);
  }
};

}  // namespace

DISTMETRICS_PLUGIN("example_no_sync", "1.0.0") {
  registry.add({"MeanAbsoluteError", "regression", "BROKEN: never syncs", {},
                [](const nlohmann::json&) { return std::make_unique<NoSyncMeanAbsoluteError>(); }});
}
