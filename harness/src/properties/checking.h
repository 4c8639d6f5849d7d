// What the property checkers share (harness/src/properties/<name>.cpp): judging computes on
// every rank against an expected result, the lines every failure message ends with, a skip
// with its reason, the full-data comparison golden and agrees_with_reference make.
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/check.h"
#include "distmetrics/harness/number_text.h"
#include "../unity_id.h"

namespace distmetrics::harness::checking {

// A copy of the result shown, or none.
std::optional<ComputeResult> optional_result(const ComputeResult* r);
std::string tolerance_text(const Tolerance& tol);
// "  variant: ...\n  reproduce: ..." (no newline at the end): a result's variant_lines.
std::string variant_lines(const CheckContext& ctx);
// "compute 2 of 4 (script step 3: 'compute')".
std::string compute_phrase(const CheckContext& ctx, int k);
// Why a rank has no record of a compute: the step that stopped its script.
std::string missing_text(const RankObservation& obs);
// A property not judged (SkipWhy::NotJudged): "<name>: not judged: <why>".
PropertyResult skipped(const std::string& name, const std::string& why);
// A property that does not apply to the metric (it cannot save or merge its state, it declares
// that it takes no batch of no rows): a skip that says "not applicable", never shown as held and
// not counted against the class (peers/judged.py), unlike skipped()'s "not judged".
PropertyResult not_applicable(const std::string& name, const std::string& why);

// Judges computes `ks` on every rank (the rank's result, or what `actual_of` takes from its
// record) against `expected_for` (harness::compare_at_compute); `expected_label` names the
// expected value in the message. Returns the result of the first failing compute, or a pass.
PropertyResult judge(const CheckContext& ctx, const std::string& name, const std::vector<int>& ks,
                     const ExpectedFor& expected_for, const Tolerance& tol, const std::string& expected_label,
                     const std::string& what_it_means, const ActualOf& actual_of = nullptr);

// Whether the script's compute roles include `role` (for Property::by_default).
inline bool script_has(const std::vector<ComputeRole>& roles, ComputeRole role) {
  return std::find(roles.begin(), roles.end(), role) != roles.end();
}

// "0, 1, 3": the ranks a root cause's headline or evidence names after "rank(s) ".
std::string rank_numbers(const std::vector<int>& ranks);

// The computes of the script plan with this role.
std::vector<int> computes_with(const CheckContext& ctx, ComputeRole role);
// The single process's result at compute k, or nullptr.
const ComputeResult* single_at(const CheckContext& ctx, int k);
// The rank's own result at compute k, or nullptr.
const ComputeResult* own_result(const CheckContext& ctx, int rank, int k);

// The full-data result against a value given from outside (golden, the [reference]): the single
// process on all the data, and every rank at each compute that saw all the data. The tolerance
// widens to the precision of what the metric returned (and of the variant's input dtype).
PropertyResult check_full_data(const CheckContext& ctx, const std::string& name, const std::string& label,
                               const ComputeResult& expected, const Tolerance& given, const std::string& hint);

// A rank-side probe's result at a compute (state_roundtrip's restored instance, merge_state's
// merged one), or nullptr.
const ComputeResult* probed(const ComputeRecord& record, const std::string& property);

// Property::last_evidence_step of a property that reads the computes that saw all the data (and
// the single process): the last such compute's step, -1 when there is none.
int last_full_data_step(const CheckContext& ctx);
// Of one that reads the single process alone: -1.
inline int single_process_only(const CheckContext&) { return -1; }
// The computes where some rank has a result of `property`'s probe.
std::vector<int> computes_probed(const CheckContext& ctx, const std::string& property);

}  // namespace distmetrics::harness::checking
