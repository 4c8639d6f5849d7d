// golden: the full-data result equals the scenario's [golden] value.
#include "checking.h"
#include "distmetrics/harness/property.h"

namespace distmetrics::harness::properties {
namespace {
namespace DISTMETRICS_UNITY_ID {

using namespace checking;

PropertyResult check(const CheckContext& ctx, const std::string& hint) {
  if (!ctx.scenario.golden) return skipped("golden", "the scenario gives no [golden] value");
  const Tolerance tol{ctx.scenario.golden->rtol, ctx.scenario.golden->atol, ctx.scenario.tolerance.exact};
  ComputeResult golden;
  golden.value = ctx.scenario.golden->value;
  return check_full_data(ctx, "golden", "golden", golden, tol, hint);
}

bool golden_given(const Scenario& s, const std::vector<ComputeRole>&) { return s.golden.has_value(); }

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

// No root-cause rule: a wrong formula fails it alone, and its own message says so.
Property golden() {
  using namespace DISTMETRICS_UNITY_ID;
  Property p;
  p.name = "golden";
  p.holds_when = "the result equals a value written in the scenario";
  p.label = "golden";
  p.column_order = 7;
  p.needs_table = "golden";
  p.by_default = golden_given;
  p.check = check;
  p.hint = "the result on all the data must be the value written in the scenario";
  p.last_evidence_step = last_full_data_step;
  return p;
}

}  // namespace distmetrics::harness::properties
