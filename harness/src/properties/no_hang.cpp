// no_hang: the variant finishes within its deadline. The engine judges it from the run itself
// (engine.cpp: a rank to blame, a crash, what every rank was doing), so it has no checker.
#include "distmetrics/harness/property.h"

namespace distmetrics::harness::properties {
namespace {

bool always(const Scenario&) { return true; }

}  // namespace

Property no_hang() {
  Property p;
  p.name = "no_hang";
  p.holds_when = "the variant finishes within its deadline (always checked)";
  p.label = "no_hang";
  p.column_order = 0;
  p.checked_anyway = always;
  p.judged_by_the_engine = true;
  return p;
}

}  // namespace distmetrics::harness::properties
