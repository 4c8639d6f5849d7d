// From evidence to a cause: which properties failed together, and how, say what is wrong with a
// metric better than each failure alone. A verdict leads with the root cause and lists the
// failures that follow from it under it (docs/properties.md, "Root cause").
//
// Each property's descriptor carries the rules its failure can show, each with a priority
// (property.h, RootCauseRule); find_root_cause tries every rule of the table lowest priority
// first, and the first that names a cause wins. The chain they make, top down:
//
//   evidence                                                  root cause (first match)
//   only accepts_empty_batch failed                           the metric rejects an empty batch (any
//                                                             other failure leads instead: the rest
//                                                             of the script ran without it)
//   the first NaN comes right after an 'update empty', the    the empty batch puts NaN in the state
//   single process (no empty update) gives a number           (a mean of no values), whichever
//                                                             property judges that compute
//   batch sizes give float32 values that flip sign, turn      float32 cancellation (a variance of a
//   non-finite or differ tenfold                              constant target), not a formula
//   batch sizes disagree beyond float32 rounding              per-batch statistics (Ignite #2087)
//   compute() changed the local state digest                 an in-place sync (PyTorch-Ignite #2803)
//   wrong at the first compute, ranks disagree                no sync
//   wrong at the first compute, ranks agree                   the sync reduces wrongly (a state's
//                                                             reduction, a mean of means, a sum not divided)
//   ... and the difference is within float32 rounding         float32 sums or collectives (PR #2959)
//   right at first, wrong after more updates, state intact    a cache or flag kept across computes
//   a second compute differs, state intact                    a cache or "already reduced" flag
//   only the replay after reset() differs                     reset() forgets a state
//   batch sizes disagree within float32 rounding              float32 rounding, not a formula
//   the saved state does not restore the metric               a state left out of the saved state
//   the merged states give another result                     a merge that forgets its own state
//
// A hang, a crash or a desync is not a root cause: who is to blame for it is said by the judging
// module's blame (harness/src/judging/blame.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/check.h"
#include "distmetrics/harness/observation.h"
#include "distmetrics/harness/verdict.h"

namespace distmetrics::harness {

// What a root-cause rule reads: the variant's observations and every property's result.
struct Evidence {
  const CheckContext& ctx;
  const std::vector<PropertyResult>& results;

  const PropertyResult* result(const std::string& property) const;  // nullptr: not checked
  // Failed, and not as the scenario expects.
  bool failed(const std::string& property) const;
  // Every property that failed so (the engine's no_hang aside), in the results' order.
  std::vector<std::string> failed_properties() const;
  // Its largest difference is within float32 rounding of its single-process value (relative 2e-5).
  bool within_float32_rounding(const std::string& property) const;
  // Its largest difference relative to its single-process value's magnitude.
  double relative_difference(const std::string& property) const;
};

// A number as root-cause texts show it (3 significant digits).
std::string cause_number(double v);

// The root cause of a variant's failed properties (expected failures excepted), or none when
// nothing failed. Always names one when something failed (at worst the first failure itself).
std::optional<RootCause> find_root_cause(const CheckContext& ctx, const std::vector<PropertyResult>& results);

// Leads the verdict with the cause: the cause's property first, its message prefixed with the
// headline, evidence and hint; each consequence marked (consequence_of) and its message headed
// so; the verdict's reason the headline; verdict.root_cause set.
void apply_root_cause(Verdict& verdict, const RootCause& cause);

}  // namespace distmetrics::harness
