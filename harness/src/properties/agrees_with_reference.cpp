// agrees_with_reference: the full-data result equals the scenario's [reference] (a Python
// callable) on all the data. conform checks it against its own reference implementation
// instead when the scenario gives none (plugin/src/conform_reference.cpp).
#include "checking.h"
#include "distmetrics/harness/property.h"

namespace distmetrics::harness::properties {
namespace {
namespace DISTMETRICS_UNITY_ID {

using namespace checking;

PropertyResult check(const CheckContext& ctx, const std::string& hint) {
  if (!ctx.scenario.reference) return skipped("agrees_with_reference", "the scenario gives no [reference]");
  if (!ctx.single.reference) return skipped("agrees_with_reference", "the reference was not called (no data for it)");
  const std::string label = "reference " + ctx.scenario.reference->python;
  if (ctx.single.reference->raised()) {
    PropertyResult result;
    result.name = "agrees_with_reference";
    result.outcome = Outcome::Fail;
    result.message = "agrees_with_reference failed: " + label + " raised " + ctx.single.reference->error_type + ": " +
                     ctx.single.reference->error + "\n";
    result.variant_lines = variant_lines(ctx);
    return result;
  }
  return check_full_data(ctx, "agrees_with_reference", label, *ctx.single.reference, ctx.scenario.tolerance, hint);
}

bool reference_given(const Scenario& s, const std::vector<ComputeRole>&) { return s.reference.has_value(); }

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

// No root-cause rule: a formula that differs from the reference fails it alone, and its own
// message says so.
Property agrees_with_reference() {
  using namespace DISTMETRICS_UNITY_ID;
  Property p;
  p.name = "agrees_with_reference";
  p.holds_when =
      "the result on all the data equals the scenario's `[reference]` (a Python callable such as a scikit-learn "
      "function) on all the data";
  p.label = "ref";
  p.column_order = 8;
  p.needs_table = "reference";
  p.by_default = reference_given;
  p.check = check;
  p.last_evidence_step = last_full_data_step;
  p.hint = "the result on all the data must equal the scenario's [reference] on the same data (within the scenario's "
           "tolerance): a formula, an average or a class convention that differs from the reference's";
  return p;
}

}  // namespace distmetrics::harness::properties
