// merge_state: after every compute, every rank's saved state is gathered, one fresh
// single-process instance loads rank 0's and merges the others', and its result must equal the
// distributed result on that rank. Checked only when listed.
#include <ATen/ATen.h>

#include "checking.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/text.h"
#include "rank_probe.h"

namespace distmetrics::harness::properties {
namespace {

using namespace checking;

constexpr const char* kName = "merge_state";

ComputeResult raised_result(const std::string& type, const std::string& message) {
  ComputeResult result;
  result.error_type = type;
  result.error = message;
  return result;
}

// Every rank's saved state travels to every rank (one all_gather of bytes); a fresh
// single-process instance loads rank 0's, merges the others' and computes.
class MergedInstance : public RankProbe {
 public:
  explicit MergedInstance(const ProbeSetup& setup) : setup_(setup) {
    if (!setup.metric.can_merge_state())
      skipped = setup.metric.name() + " cannot merge saved states (Metric::can_merge_state is false)";
    else if (!setup.metric.save_state())
      skipped = setup.metric.name() + " cannot save its state (Metric::save_state gives nothing)";
  }

  std::optional<ComputeResult> after_compute(int step, const std::string& where) override {
    if (!skipped.empty()) return std::nullopt;
    runtime::set_task_context(where + "merge_state() of every rank's state");
    std::string saved, save_error;
    try {
      saved = setup_.metric.save_state().value_or("");
    } catch (const std::exception& e) {
      if (runtime::is_allocation_failure(e)) throw;
      save_error = runtime::exception_type_name(e) + ": " + runtime::first_line(e.what());
    }
    // Every rank takes part in the gather, a rank whose save_state() raised too (with no bytes).
    const auto bytes =
        at::from_blob(const_cast<char*>(saved.data()), {static_cast<std::int64_t>(saved.size())}, at::kByte);
    const auto per_rank = setup_.comm.all_gather(bytes.clone());
    std::vector<std::string> states;
    for (const auto& t : per_rank) {
      const auto c = t.to(at::kCPU).contiguous();
      states.emplace_back(static_cast<const char*>(c.data_ptr()), static_cast<std::size_t>(c.numel()));
    }
    if (!save_error.empty()) return raised_result("SaveStateError", "save_state() raised " + save_error);
    auto merged = setup_.make();
    try {
      merged->load_state(states.front());
      merged->merge_state(std::vector<std::string>(states.begin() + 1, states.end()));
    } catch (const std::exception& e) {
      return raised_result(runtime::exception_type_name(e), "merging the ranks' states: " + runtime::first_line(e.what()));
    }
    return computed_result(*merged, step);
  }

 private:
  ProbeSetup setup_;
};

std::unique_ptr<RankProbe> probe(const ProbeSetup& setup) { return std::make_unique<MergedInstance>(setup); }

PropertyResult check(const CheckContext& ctx, const std::string& hint) {
  // A class that cannot merge or save its state (torchmetrics' merge_state refuses a
  // full_state_update class): the property does not apply to it, shown as such, never as held.
  for (const auto& obs : ctx.ranks)
    if (const auto it = obs.probe_skipped.find(kName); it != obs.probe_skipped.end() && !it->second.empty())
      return not_applicable(kName, it->second);
  const auto ks = computes_probed(ctx, kName);
  if (ks.empty()) return skipped(kName, "no compute gave a value to merge against");
  return judge(ctx, kName, ks, [&](int rank, int k) { return own_result(ctx, rank, k); }, ctx.scenario.tolerance,
               "distributed", hint, [](const ComputeRecord& r) { return probed(r, kName); });
}

std::optional<RootCause> merge_differs(const Evidence& e) {
  if (!e.failed(kName)) return std::nullopt;
  RootCause cause;
  cause.property = kName;
  cause.headline = "merging the ranks' states gives another result than the distributed compute";
  cause.evidence = "merge_state failed";
  cause.hint = "merge_state must keep its own state and combine each state with the reduction its sync uses";
  return cause;
}

}  // namespace

// Listed only (not by default): it saves and moves every rank's state.
Property merge_state() {
  Property p;
  p.name = kName;
  p.holds_when = "the ranks' states merged into one single-process instance give the distributed result";
  p.label = "merge";
  p.column_order = 10;
  p.check = check;
  p.hint = "one instance that merged every rank's saved state (merge_state, as torcheval does) must give the "
           "distributed result";
  p.root_causes = {{120, merge_differs}};
  p.probe = probe;
  return p;
}

}  // namespace distmetrics::harness::properties
