// state_roundtrip: each rank saves its state just before its first compute, a fresh instance
// loads it and takes every later step the original takes; at every compute from the first it
// must give what the original gives on that rank. Checked only when listed.
#include "checking.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/text.h"
#include "rank_probe.h"

namespace distmetrics::harness::properties {
namespace {
namespace DISTMETRICS_UNITY_ID {

using namespace checking;

constexpr const char* kName = "state_roundtrip";

// The restored twin: made before the first compute from the state the metric saved there.
class RestoredInstance : public RankProbe {
 public:
  explicit RestoredInstance(const ProbeSetup& setup) : setup_(setup) {}

  void before_compute(const std::string& where) override {
    if (saved_) return;
    saved_ = true;
    runtime::set_task_context(where + "save_state() and load_state() into a fresh instance");
    try {
      if (const auto saved = setup_.metric.save_state()) {
        twin_ = setup_.make();
        twin_->load_state(*saved);
        twin_->set_communicator(&setup_.comm);
      } else {
        skipped = setup_.metric.name() + " cannot save its state (Metric::save_state gives nothing)";
      }
    } catch (const std::exception& e) {
      if (runtime::is_allocation_failure(e)) throw;
      twin_.reset();
      error = "saving the state and loading it into a fresh instance raised " + runtime::exception_type_name(e) +
              ": " + runtime::first_line(e.what());
    }
  }
  void updated(const metrics::Batch& batch) override {
    if (twin_) twin_->update(batch);
  }
  void reset() override {
    if (twin_) twin_->reset();
  }
  std::optional<ComputeResult> after_compute(int step, int, const std::string& where) override {
    if (!twin_) return std::nullopt;
    runtime::set_task_context(where + "compute() of the restored instance");
    return computed_result(*twin_, step);
  }

 private:
  ProbeSetup setup_;
  std::unique_ptr<metrics::Metric> twin_;
  bool saved_ = false;
};

std::unique_ptr<RankProbe> probe(const ProbeSetup& setup) { return std::make_unique<RestoredInstance>(setup); }

PropertyResult check(const CheckContext& ctx, const std::string& hint) {
  for (const auto& obs : ctx.ranks) {
    if (const auto it = obs.probe_error.find(kName); it != obs.probe_error.end() && !it->second.empty()) {
      PropertyResult result;
      result.name = kName;
      result.outcome = Outcome::Fail;
      result.message = "state_roundtrip failed on rank " + std::to_string(obs.rank) + ": " + it->second + "\n  " + hint +
                       "\n";
      result.variant_lines = variant_lines(ctx);
      return result;
    }
  }
  // A metric that cannot save its state: the property does not apply to it (never shown as held).
  for (const auto& obs : ctx.ranks)
    if (const auto it = obs.probe_skipped.find(kName); it != obs.probe_skipped.end() && !it->second.empty())
      return not_applicable(kName, it->second);
  const auto ks = computes_probed(ctx, kName);
  if (ks.empty()) return skipped(kName, "no rank computed after restoring its state (every rank's script stopped before)");
  return judge(ctx, kName, ks, [&](int rank, int k) { return own_result(ctx, rank, k); }, ctx.scenario.tolerance,
               "the original", hint, [](const ComputeRecord& r) { return probed(r, kName); });
}

std::optional<RootCause> state_not_restored(const Evidence& e) {
  if (!e.failed(kName)) return std::nullopt;
  RootCause cause;
  cause.property = kName;
  cause.headline = "the saved state does not restore the metric: an instance loaded from it gives other results";
  cause.evidence = "state_roundtrip failed";
  cause.hint = "save every state, gathered rows included (torchmetrics: a state not declared persistent is left out "
               "of state_dict()), and load each one back";
  return cause;
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

// Listed only (not by default): it saves, loads and moves every rank's state.
Property state_roundtrip() {
  using namespace DISTMETRICS_UNITY_ID;
  Property p;
  p.name = kName;
  p.holds_when =
      "the state saved on every rank before the first compute, loaded into a fresh instance that takes the same "
      "steps, gives the same results";
  p.label = "trip";
  p.column_order = 9;
  p.needs_compute = ComputeRole::Fresh;
  p.needs_compute_text = "a compute before any other compute (the state is saved just before it)";
  p.check = check;
  p.hint = "the instance that loaded the state each rank saved before its first compute (save_state/load_state, "
           "state_dict/load_state_dict), and took the same steps since, must give what the original gives";
  p.root_causes = {{110, state_not_restored}};
  p.probe = probe;
  return p;
}

}  // namespace distmetrics::harness::properties
