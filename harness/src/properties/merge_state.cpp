// merge_state: after every compute, every rank's saved state is gathered, one fresh
// single-process instance loads rank 0's and merges the others', and its result must equal the
// distributed result on every rank. Checked only when listed.
#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checking.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/text.h"
#include "rank_probe.h"

namespace distmetrics::harness::properties {
namespace {
namespace DISTMETRICS_UNITY_ID {

using namespace checking;

constexpr const char* kName = "merge_state";

constexpr const char* kSaveStateError = "SaveStateError";

ComputeResult raised_result(const std::string& type, const std::string& message) {
  ComputeResult result;
  result.error_type = type;
  result.error = message;
  return result;
}

// Every rank's saved state travels to every rank (one all_gather of bytes). One rank, the merger
// of that compute, has a fresh single-process instance load rank 0's state, merge the others' and
// compute: every rank holds the same bytes and would merge them with the same code, so one merge
// is the evidence, judged against every rank's distributed result (merged_result below). The
// ranks take turns (a merge is work its peers would wait for at their next collective), and a
// compute whose gathered states are those of the compute before (nothing fed in between) takes
// the merger's value from then: the same bytes merged again give the same value.
class MergedInstance : public RankProbe {
 public:
  explicit MergedInstance(const ProbeSetup& setup) : setup_(setup) {
    if (!setup.metric.can_merge_state())
      skipped = setup.metric.name() + " cannot merge saved states (Metric::can_merge_state is false)";
    else if (!setup.metric.save_state())
      skipped = setup.metric.name() + " cannot save its state (Metric::save_state gives nothing)";
  }

  std::optional<ComputeResult> after_compute(int step, int k, const std::string& where) override {
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
    const bool same_as_before = !last_states_.empty() && states == last_states_;
    const int merger = same_as_before && last_merger_ >= 0 ? last_merger_ : merger_among(states, k);
    last_merger_ = merger;
    last_states_ = std::move(states);  // kept for the next compute's comparison, merged from below
    // A rank whose own save raised or gave nothing says so (it is never the merger: it has no
    // bytes to give).
    if (!save_error.empty()) return raised_result(kSaveStateError, "save_state() raised " + save_error);
    if (saved.empty()) return raised_result(kSaveStateError, "save_state() gave no state at this compute");
    if (merger != setup_.comm.rank()) return std::nullopt;
    if (same_as_before && last_value_) return *last_value_;
    auto merged = setup_.make();
    ComputeResult result;
    try {
      merged->load_state(last_states_.front());
      merged->merge_state(std::vector<std::string>(last_states_.begin() + 1, last_states_.end()));
      result = computed_result(*merged, step);
    } catch (const runtime::CollectiveError&) {
      throw;
    } catch (const std::exception& e) {
      if (runtime::is_allocation_failure(e)) throw;
      result = raised_result(runtime::exception_type_name(e), "merging the ranks' states: " + runtime::first_line(e.what()));
    }
    // Only a value is taken again: an error's message names the script step it was raised in.
    last_value_.reset();
    if (!result.raised()) last_value_ = result;
    return result;
  }

 private:
  // Compute k's merger: the ranks whose state was saved take turns (rank k mod their number).
  static int merger_among(const std::vector<std::string>& states, int k) {
    std::vector<int> saved;
    for (std::size_t r = 0; r < states.size(); ++r)
      if (!states[r].empty()) saved.push_back(static_cast<int>(r));
    return saved.empty() ? -1 : saved[static_cast<std::size_t>(k) % saved.size()];
  }

  ProbeSetup setup_;
  std::vector<std::string> last_states_;  // what the compute before gathered
  int last_merger_ = -1;
  std::optional<ComputeResult> last_value_;  // this rank's merged value there, when it merged
};

std::unique_ptr<RankProbe> probe(const ProbeSetup& setup) { return std::make_unique<MergedInstance>(setup); }

// What a rank's compute is judged against: its own probed result where it has one (it merged, or
// its own save raised), else the merger's: the one rank whose probed result at that compute is
// a merge (not its own save's error).
const ComputeResult* merged_result(const CheckContext& ctx, const ComputeRecord& record) {
  if (const auto* own = probed(record, kName)) return own;
  for (const auto& obs : ctx.ranks)
    if (const auto* other = obs.compute(record.index))
      if (const auto* merged = probed(*other, kName); merged && merged->error_type != kSaveStateError) return merged;
  return nullptr;
}

PropertyResult check(const CheckContext& ctx, const std::string& hint) {
  // A class that cannot merge or save its state (torchmetrics' merge_state refuses a
  // full_state_update class): the property does not apply to it, shown as such, never as held.
  for (const auto& obs : ctx.ranks)
    if (const auto it = obs.probe_skipped.find(kName); it != obs.probe_skipped.end() && !it->second.empty())
      return not_applicable(kName, it->second);
  const auto ks = computes_probed(ctx, kName);
  if (ks.empty()) return skipped(kName, "no compute gave a value to merge against");
  return judge(ctx, kName, ks, [&](int rank, int k) { return own_result(ctx, rank, k); }, ctx.scenario.tolerance,
               "distributed", hint, [&](const ComputeRecord& r) { return merged_result(ctx, r); });
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

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

// Listed only (not by default): it saves and moves every rank's state.
Property merge_state() {
  using namespace DISTMETRICS_UNITY_ID;
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
