#include "distmetrics/harness/check.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <optional>
#include <sstream>

#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/harness/property.h"

namespace distmetrics::harness {
namespace {

using nlohmann::json;

json value_json(const ComputeResult& r) { return r.value && !r.raised() ? *r.value : json(nullptr); }
json value_json(const ComputeResult* r) { return r ? value_json(*r) : json(nullptr); }

std::string number_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream out;
  out << std::setprecision(6) << v;
  return out.str();
}

std::string tolerance_text(const Tolerance& tol) {
  std::ostringstream out;
  out << "rtol " << tol.rtol << ", atol " << tol.atol << "; integer tensors";
  for (const auto& e : tol.exact) out << ", '" << e << "'";
  out << " exact";
  return out.str();
}

std::string variant_lines(const CheckContext& ctx) {
  const auto& v = ctx.variant;
  std::ostringstream out;
  out << "  variant: " << v.id << " (backend " << v.backend << ", world size " << v.world_size << ", shard " << v.shard
      << ", placement " << v.placement << ", seed " << v.seed << ")\n"
      << "  reproduce: " << v.reproduce();
  return out.str();
}

std::string compute_phrase(const CheckContext& ctx, int k) {
  const auto& point = ctx.plan.computes.at(k);
  std::ostringstream out;
  out << "compute " << k + 1 << " of " << ctx.plan.computes.size() << " (script step " << point.step + 1 << ": '"
      << ctx.scenario.script.at(point.step).text << "')";
  return out.str();
}

// Why a rank has no record of a compute: the step that stopped its script.
std::string missing_text(const RankObservation& obs) {
  if (obs.error)
    return "did not get there: its script stopped at step " + std::to_string(obs.error->step + 1) + " (" +
           obs.error->op + "), raising " + obs.error->type + ": " + obs.error->message;
  return "did not get there";
}

PropertyResult skipped(const std::string& name, const std::string& why) {
  PropertyResult p;
  p.name = name;
  p.outcome = Outcome::Skip;
  p.message = name + ": not judged: " + why;
  return p;
}

// Per rank, what to compare at compute k: the expected result (nullptr when it cannot be had).
using ExpectedFor = std::function<const ComputeResult*(int rank, int k)>;

struct RankLine {
  const ComputeResult* actual = nullptr;
  const ComputeResult* expected = nullptr;
  Comparison cmp;
  std::string missing;
};

// Judges computes `ks` on every rank. `single_shown` is what the report shows as the single
// value for compute k. Returns the result of the first failing compute, or a pass.
PropertyResult judge(const CheckContext& ctx, const std::string& name, const std::vector<int>& ks,
                     const ExpectedFor& expected_for, const Tolerance& tol, const std::string& expected_label,
                     const std::string& what_it_means,
                     const std::function<const ComputeResult*(const ComputeRecord&)>& actual_of = nullptr) {
  PropertyResult result;
  result.name = name;
  double largest = 0;
  for (int k : ks) {
    std::vector<RankLine> lines(ctx.ranks.size());
    bool failed = false;
    for (std::size_t r = 0; r < ctx.ranks.size(); ++r) {
      auto& line = lines[r];
      const auto* record = ctx.ranks[r].compute(k);
      line.expected = expected_for(static_cast<int>(r), k);
      if (!record) {
        line.missing = missing_text(ctx.ranks[r]);
        failed = true;
        continue;
      }
      line.actual = actual_of ? actual_of(*record) : &record->result;
      if (!line.actual) {
        line.missing = "no result at this compute";
        failed = true;
        continue;
      }
      if (!line.expected) continue;
      line.cmp = compare_results(*line.expected, *line.actual, tol);
      if (!line.cmp.equal) failed = true;
      if (std::isfinite(line.cmp.difference)) largest = std::max(largest, line.cmp.difference);
      else largest = line.cmp.difference;
    }
    const ComputeResult* single = k < static_cast<int>(ctx.single.at_compute.size()) ? &ctx.single.at_compute[k] : nullptr;
    result.single = value_json(single);
    result.ranks = json::array();
    for (const auto& line : lines) result.ranks.push_back(value_json(line.actual));
    if (!failed) continue;
    result.outcome = Outcome::Fail;
    std::ostringstream msg;
    msg << name << " failed at " << compute_phrase(ctx, k) << ": " << what_it_means << "\n";
    msg << "  single process: " << (single ? single->text() : "none") << "\n";
    double worst = 0;
    bool numeric = true;
    for (std::size_t r = 0; r < lines.size(); ++r) {
      const auto& line = lines[r];
      msg << "  rank " << r << ": ";
      if (!line.actual) {
        msg << line.missing << "\n";
        numeric = false;
        continue;
      }
      msg << line.actual->text();
      if (line.expected) {
        if (expected_label != "single process") msg << "   (" << expected_label << ": " << line.expected->text() << ")";
        if (line.actual->raised() || line.expected->raised()) {
          numeric = false;
        } else {
          msg << "   difference " << number_text(line.cmp.difference);
          worst = std::max(worst, line.cmp.difference);
        }
        if (!line.cmp.equal) msg << "   <- differs" << (line.cmp.detail.empty() ? "" : ": " + line.cmp.detail);
      }
      msg << "\n";
    }
    msg << "  tolerance: " << tolerance_text(tol) << "\n" << variant_lines(ctx);
    result.message = msg.str();
    if (numeric || worst > 0) result.difference = worst;
    return result;
  }
  std::ostringstream msg;
  msg << name << " held at compute";
  for (std::size_t i = 0; i < ks.size(); ++i) msg << (i ? ", " : " ") << ks[i] + 1;
  msg << " on all " << ctx.ranks.size() << " rank(s) (largest difference " << number_text(largest) << ")";
  result.message = msg.str();
  result.difference = largest;
  return result;
}

std::vector<int> computes_with(const CheckContext& ctx, ComputeRole role) {
  std::vector<int> ks;
  for (const auto& point : ctx.plan.computes)
    if (point.role == role) ks.push_back(point.index);
  return ks;
}

const ComputeResult* single_at(const CheckContext& ctx, int k) {
  return k < static_cast<int>(ctx.single.at_compute.size()) ? &ctx.single.at_compute[k] : nullptr;
}

}  // namespace

Comparison compare_results(const ComputeResult& expected, const ComputeResult& actual, const Tolerance& tolerance) {
  Comparison c;
  if (expected.raised() || actual.raised()) {
    c.equal = expected.raised() && actual.raised() && expected.error_type == actual.error_type;
    c.difference = c.equal ? 0.0 : INFINITY;
    if (!c.equal) c.detail = actual.text() + " vs expected " + expected.text();
    return c;
  }
  if (!expected.value || !actual.value) {
    c.equal = !expected.value && !actual.value;
    c.difference = c.equal ? 0.0 : INFINITY;
    if (!c.equal) c.detail = "one result has no value";
    return c;
  }
  return compare_values(*expected.value, *actual.value, tolerance);
}

std::string equal_to_single_hint() {
  return "every rank must give the single-process result on the union of the data fed so far";
}

std::string update_after_compute_hint() {
  return "after a mid-stream compute and more updates, every rank must still give the single-process result "
         "(a compute that folds synced values into the local state counts samples twice)";
}

std::string reset_replay_hint() {
  return "after reset() and the same data again, each rank must give what it gave on that data before the reset";
}

std::string ranks_agree_hint() { return "every rank must return the same result"; }

std::string idempotent_hint() {
  return "a second compute() with no update between must return the same result on every rank";
}

std::string batch_invariant_hint() {
  return "the single-process result on the same data depends on the batch size (a formula that uses per-batch "
         "statistics, e.g. the batch's own mean, gives different answers for different batchings, and so for "
         "different world sizes)";
}

std::string golden_hint() { return "the result on all the data must be the value written in the scenario"; }

std::string agrees_with_reference_hint() {
  return "the result on all the data must equal the scenario's [reference] on the same data (within the scenario's "
         "tolerance): a formula, an average or a class convention that differs from the reference's";
}

std::string expected_error_hint() {
  return "together (decided from synced state), as the single process does";
}

PropertyResult check_equal_to_single(const CheckContext& ctx, const std::string& hint) {
  const auto ks = computes_with(ctx, ComputeRole::Fresh);
  if (ks.empty()) return skipped("equal_to_single", "the script has no compute before any other compute");
  return judge(ctx, "equal_to_single", ks, [&](int, int k) { return single_at(ctx, k); }, ctx.scenario.tolerance,
               "single process", hint);
}

PropertyResult check_update_after_compute(const CheckContext& ctx, const std::string& hint) {
  const auto ks = computes_with(ctx, ComputeRole::AfterUpdate);
  if (ks.empty()) return skipped("update_after_compute", "the script has no compute after a compute and more updates");
  return judge(ctx, "update_after_compute", ks, [&](int, int k) { return single_at(ctx, k); }, ctx.scenario.tolerance,
               "single process", hint);
}

PropertyResult check_reset_replay(const CheckContext& ctx, const std::string& hint) {
  const auto ks = computes_with(ctx, ComputeRole::AfterReset);
  if (ks.empty()) return skipped("reset_replay", "the script has no compute after a reset");
  bool own = true;
  for (int k : ks) own = own && ctx.plan.computes[k].replay_of >= 0;
  return judge(
      ctx, "reset_replay", ks,
      [&](int rank, int k) -> const ComputeResult* {
        const int before = ctx.plan.computes[k].replay_of;
        if (before < 0) return single_at(ctx, k);
        const auto* record = ctx.ranks[rank].compute(before);
        return record ? &record->result : nullptr;
      },
      ctx.scenario.tolerance, own ? "before the reset" : "single process", hint);
}

PropertyResult check_ranks_agree(const CheckContext& ctx, const std::string& hint) {
  std::vector<int> ks;
  for (const auto& point : ctx.plan.computes) ks.push_back(point.index);
  if (ks.empty()) return skipped("ranks_agree", "the script has no compute");
  return judge(
      ctx, "ranks_agree", ks,
      [&](int, int k) -> const ComputeResult* {
        const auto* record = ctx.ranks.empty() ? nullptr : ctx.ranks[0].compute(k);
        return record ? &record->result : nullptr;
      },
      ctx.scenario.tolerance, "rank 0", hint);
}

PropertyResult check_idempotent(const CheckContext& ctx, const std::string& hint) {
  const auto ks = computes_with(ctx, ComputeRole::Repeat);
  if (ks.empty()) return skipped("idempotent", "the script has no compute directly after a compute");
  auto result = judge(
      ctx, "idempotent", ks,
      [&](int rank, int k) -> const ComputeResult* {
        const auto* record = ctx.ranks[rank].compute(ctx.plan.computes[k].previous);
        return record ? &record->result : nullptr;
      },
      ctx.scenario.tolerance, "the compute before", hint);
  if (result.outcome == Outcome::Fail) return result;
  // Every compute must leave the local state as it found it.
  bool any_digest = false;
  for (const auto& obs : ctx.ranks) {
    for (const auto& record : obs.computes) {
      if (record.digest_before.empty() || record.digest_after.empty()) continue;
      any_digest = true;
      if (record.digest_before == record.digest_after) continue;
      result.outcome = Outcome::Fail;
      const auto* single = single_at(ctx, record.index);
      result.single = value_json(single);
      result.ranks = json::array();
      for (const auto& o : ctx.ranks) result.ranks.push_back(value_json(o.compute(record.index) ? &o.compute(record.index)->result : nullptr));
      std::ostringstream msg;
      msg << "idempotent failed at " << compute_phrase(ctx, record.index) << ": compute() changed rank " << obs.rank
          << "'s local state (state digest " << record.digest_before << " before, " << record.digest_after
          << " after); compute() must sync copies of the state and leave the local state untouched\n"
          << "  single process: " << (single ? single->text() : "none") << "\n"
          << "  rank " << obs.rank << ": " << record.result.text() << "\n"
          << variant_lines(ctx);
      result.message = msg.str();
      result.difference.reset();
      return result;
    }
  }
  result.message += any_digest ? "; every compute left the local state digest unchanged"
                               : "; the metric gives no state digest, so only the values were compared";
  return result;
}

std::string state_roundtrip_hint() {
  return "the instance that loaded the state each rank saved before its first compute (save_state/load_state, "
         "state_dict/load_state_dict), and took the same steps since, must give what the original gives";
}

std::string merge_state_hint() {
  return "one instance that merged every rank's saved state (merge_state, as torcheval does) must give the "
         "distributed result";
}

namespace {

// The computes where some rank has a result of `of` (restored or merged), and why none has.
std::vector<int> computes_having(const CheckContext& ctx, const ComputeResult* (*of)(const ComputeRecord&)) {
  std::vector<int> ks;
  for (const auto& point : ctx.plan.computes)
    for (const auto& obs : ctx.ranks)
      if (const auto* record = obs.compute(point.index); record && of(*record)) {
        ks.push_back(point.index);
        break;
      }
  return ks;
}

const ComputeResult* restored_of(const ComputeRecord& r) { return r.restored ? &*r.restored : nullptr; }
const ComputeResult* merged_of(const ComputeRecord& r) { return r.merged ? &*r.merged : nullptr; }

const ComputeResult* own_result(const CheckContext& ctx, int rank, int k) {
  const auto* record = ctx.ranks[rank].compute(k);
  return record ? &record->result : nullptr;
}

}  // namespace

PropertyResult check_state_roundtrip(const CheckContext& ctx, const std::string& hint) {
  for (const auto& obs : ctx.ranks) {
    if (!obs.roundtrip_error.empty()) {
      PropertyResult result;
      result.name = "state_roundtrip";
      result.outcome = Outcome::Fail;
      result.message = "state_roundtrip failed on rank " + std::to_string(obs.rank) + ": " + obs.roundtrip_error +
                       "\n  " + hint + "\n" + variant_lines(ctx);
      return result;
    }
  }
  for (const auto& obs : ctx.ranks)
    if (!obs.roundtrip_skipped.empty()) return skipped("state_roundtrip", obs.roundtrip_skipped);
  const auto ks = computes_having(ctx, restored_of);
  if (ks.empty()) return skipped("state_roundtrip", "no rank computed after restoring its state (every rank's script stopped before)");
  return judge(ctx, "state_roundtrip", ks, [&](int rank, int k) { return own_result(ctx, rank, k); },
               ctx.scenario.tolerance, "the original", hint, restored_of);
}

PropertyResult check_merge_state(const CheckContext& ctx, const std::string& hint) {
  for (const auto& obs : ctx.ranks)
    if (!obs.merge_skipped.empty()) return skipped("merge_state", obs.merge_skipped);
  const auto ks = computes_having(ctx, merged_of);
  if (ks.empty()) return skipped("merge_state", "no compute gave a value to merge against");
  return judge(ctx, "merge_state", ks, [&](int rank, int k) { return own_result(ctx, rank, k); },
               ctx.scenario.tolerance, "distributed", hint, merged_of);
}

std::string accepts_empty_batch_hint() {
  return "update() of a batch with no rows must be accepted and change nothing (a rank's last batch, or a filter, "
         "can leave it empty); the rest of the script ran without the empty update, so the other properties judge "
         "the distributed result as if the script had none";
}

PropertyResult check_accepts_empty_batch(const CheckContext& ctx, const std::string& hint) {
  PropertyResult result;
  result.name = "accepts_empty_batch";
  std::ostringstream lines;
  const StepError* first = nullptr;
  int first_rank = -1;
  for (const auto& obs : ctx.ranks) {
    if (!obs.empty_rejected) continue;
    const auto& e = *obs.empty_rejected;
    if (!first) {
      first = &e;
      first_rank = obs.rank;
    }
    lines << "  rank " << obs.rank << ": script step " << e.step + 1 << " ('" << ctx.scenario.script.at(e.step).text
          << "') raised " << e.type << ": " << e.message.substr(0, e.message.find('\n')) << "\n";
  }
  if (!first) {
    result.message = "accepts_empty_batch held: every rank that called update() with an empty batch went on";
    return result;
  }
  result.outcome = Outcome::Fail;
  result.message = "accepts_empty_batch failed: rank " + std::to_string(first_rank) + " rejects an empty batch (" +
                   first->type + ": " + first->message.substr(0, first->message.find('\n')) + "); " + hint + "\n" +
                   lines.str() + variant_lines(ctx);
  return result;
}

PropertyResult check_batch_invariant(const CheckContext& ctx, const std::string& hint) {
  PropertyResult result;
  result.name = "batch_invariant";
  if (ctx.single.other_batch_sizes.empty()) return skipped("batch_invariant", "no other batch size to try");
  result.single = value_json(ctx.single.full);
  // As golden's: a float32 result (or input) differs between batchings by float32 rounding.
  std::vector<const json*> returned;
  if (ctx.single.full.value) returned.push_back(&*ctx.single.full.value);
  for (const auto& entry : ctx.single.other_batch_sizes)
    if (entry.second.value) returned.push_back(&*entry.second.value);
  std::string widened_by;
  const Tolerance tol = widened_for_dtypes(ctx.scenario.tolerance, returned, ctx.variant.dtype, &widened_by);
  const std::string tol_text = tolerance_text(tol) + (widened_by.empty() ? "" : " (widened from rtol " +
                                                          number_text(ctx.scenario.tolerance.rtol) + ", atol " +
                                                          number_text(ctx.scenario.tolerance.atol) + ": " + widened_by + ")");
  double largest = 0;
  std::ostringstream lines;
  bool failed = false;
  for (const auto& [size, other] : ctx.single.other_batch_sizes) {
    const auto cmp = compare_results(ctx.single.full, other, tol);
    largest = std::max(largest, cmp.difference);
    lines << "  batch size " << size << ": " << other.text();
    if (!other.raised() && !ctx.single.full.raised()) lines << "   difference " << number_text(cmp.difference);
    if (!cmp.equal) {
      failed = true;
      lines << "   <- differs" << (cmp.detail.empty() ? "" : ": " + cmp.detail);
    }
    lines << "\n";
  }
  result.difference = largest;
  if (!failed) {
    std::ostringstream msg;
    msg << "batch_invariant held: the single-process result on all the data is the same with batch size "
        << ctx.scenario.batch_size;
    for (const auto& entry : ctx.single.other_batch_sizes) msg << ", " << entry.first;
    msg << " (largest difference " << number_text(largest) << (widened_by.empty() ? "" : "; tolerance " + tol_text) << ")";
    result.message = msg.str();
    return result;
  }
  result.outcome = Outcome::Fail;
  std::ostringstream msg;
  msg << "batch_invariant failed: " << hint << "\n"
      << "  batch size " << ctx.scenario.batch_size << " (the scenario's): " << ctx.single.full.text() << "\n"
      << lines.str() << "  tolerance: " << tol_text << "\n"
      << variant_lines(ctx);
  result.message = msg.str();
  return result;
}

namespace {

// The full-data result against a value given from outside (golden, the [reference]): the single
// process on all the data, and every rank at each compute that saw all the data. The tolerance
// widens to the precision of what the metric returned (and of the variant's input dtype): a
// float32 result cannot be closer to an exact value than float32 rounding.
PropertyResult check_full_data(const CheckContext& ctx, const std::string& name, const std::string& label,
                               const ComputeResult& expected, const Tolerance& given, const std::string& hint) {
  std::vector<const json*> returned;
  if (ctx.single.full.value) returned.push_back(&*ctx.single.full.value);
  for (const auto& point : ctx.plan.computes)
    if (point.all_data)
      for (const auto& obs : ctx.ranks)
        if (const auto* record = obs.compute(point.index); record && record->result.value)
          returned.push_back(&*record->result.value);
  std::string widened_by;
  const Tolerance tol = widened_for_dtypes(given, returned, ctx.variant.dtype, &widened_by);
  const std::string tol_text =
      tolerance_text(tol) + (widened_by.empty() ? "" : " (widened from rtol " + number_text(given.rtol) + ", atol " +
                                                            number_text(given.atol) + ": " + widened_by + ")");
  PropertyResult result;
  result.name = name;
  result.single = value_json(ctx.single.full);
  const auto single_cmp = compare_results(expected, ctx.single.full, tol);
  double largest = single_cmp.difference;
  std::ostringstream problems;
  if (!single_cmp.equal)
    problems << "  single process (all data): " << ctx.single.full.text() << "   <- differs: " << single_cmp.detail << "\n";
  std::vector<int> full;
  for (const auto& point : ctx.plan.computes)
    if (point.all_data) full.push_back(point.index);
  for (int k : full) {
    for (const auto& obs : ctx.ranks) {
      const auto* record = obs.compute(k);
      if (!record) continue;  // the rank stopped earlier: reported by the other properties
      const auto cmp = compare_results(expected, record->result, tol);
      largest = std::max(largest, cmp.difference);
      if (!cmp.equal)
        problems << "  rank " << obs.rank << ", compute " << k + 1 << ": " << record->result.text()
                 << "   <- differs: " << cmp.detail << "\n";
    }
  }
  if (!full.empty())
    for (const auto& obs : ctx.ranks) result.ranks.push_back(value_json(obs.compute(full.back()) ? &obs.compute(full.back())->result : nullptr));
  result.difference = largest;
  if (problems.str().empty()) {
    result.message = name + " held: the result on all the data is " + expected.text() +
                     (full.empty() ? " (single process; no compute saw all the data on the ranks)"
                                   : " (single process, and every rank at each compute that saw all the data)") +
                     (widened_by.empty() ? "" : "; tolerance " + tol_text);
    return result;
  }
  result.outcome = Outcome::Fail;
  result.message = name + " failed: " + hint + "\n  " + label + ": " + expected.text() + "\n" + problems.str() +
                   "  tolerance: " + tol_text + "\n" + variant_lines(ctx);
  return result;
}

}  // namespace

PropertyResult check_golden(const CheckContext& ctx, const std::string& hint) {
  if (!ctx.scenario.golden) return skipped("golden", "the scenario gives no [golden] value");
  const Tolerance tol{ctx.scenario.golden->rtol, ctx.scenario.golden->atol, ctx.scenario.tolerance.exact};
  ComputeResult golden;
  golden.value = ctx.scenario.golden->value;
  return check_full_data(ctx, "golden", "golden", golden, tol, hint);
}

PropertyResult check_agrees_with_reference(const CheckContext& ctx, const std::string& hint) {
  if (!ctx.scenario.reference) return skipped("agrees_with_reference", "the scenario gives no [reference]");
  if (!ctx.single.reference) return skipped("agrees_with_reference", "the reference was not called (no data for it)");
  const std::string label = "reference " + ctx.scenario.reference->python;
  if (ctx.single.reference->raised()) {
    PropertyResult result;
    result.name = "agrees_with_reference";
    result.outcome = Outcome::Fail;
    result.message = "agrees_with_reference failed: " + label + " raised " + ctx.single.reference->error_type + ": " +
                     ctx.single.reference->error + "\n" + variant_lines(ctx);
    return result;
  }
  return check_full_data(ctx, "agrees_with_reference", label, *ctx.single.reference, ctx.scenario.tolerance, hint);
}

namespace {
// A metric that declares a value for "no data anywhere" (Expectation::no_data_value) meets an
// expected error when no one raised and every rank returned the single process's value at
// compute k (NaN equal to NaN): the text of that value, or nothing.
std::optional<std::string> agreed_no_data_value(const CheckContext& ctx, int k) {
  if (ctx.scenario.expect.no_data_value.empty()) return std::nullopt;
  const auto* single = single_at(ctx, k);
  if (!single || single->raised() || !single->value) return std::nullopt;
  for (const auto& obs : ctx.ranks) {
    const auto* record = obs.compute(k);
    if (!record || record->result.raised() || !compare_results(*single, record->result, ctx.scenario.tolerance).equal)
      return std::nullopt;
  }
  return single->text();
}
}  // namespace

PropertyResult check_expected_error(const CheckContext& ctx, const std::string& hint) {
  const auto& want = ctx.scenario.expect.error;
  if (want.empty()) return skipped("expected_error", "the scenario expects no error");
  const int k = ctx.scenario.expect.compute;
  PropertyResult result;
  result.name = "expected_error";
  std::ostringstream problems;
  const auto* single = single_at(ctx, k);
  if (!single || single->error_type != want)
    problems << "  single process: " << (single ? single->text() : "did not get there")
             << "   <- the scenario expects " << want << " here too\n";
  for (const auto& obs : ctx.ranks) {
    const auto* record = obs.compute(k);
    result.ranks.push_back(value_json(record ? &record->result : nullptr));
    if (!record) {
      problems << "  rank " << obs.rank << ": " << missing_text(obs) << "\n";
    } else if (record->result.error_type != want) {
      problems << "  rank " << obs.rank << ": " << record->result.text() << "   <- expected " << want << "\n";
    }
  }
  if (problems.str().empty()) {
    result.message = "expected_error held: every rank and the single process raised " + want + " at compute " +
                     std::to_string(k + 1) + ", together";
    return result;
  }
  if (const auto agreed = agreed_no_data_value(ctx, k)) {
    result.message = "expected_error held by the metric's declared convention (no data anywhere: compute() returns " +
                     ctx.scenario.expect.no_data_value + " instead of raising " + want + "): every rank and the "
                     "single process returned " + *agreed + " at compute " + std::to_string(k + 1);
    return result;
  }
  result.outcome = Outcome::Fail;
  if (!ctx.scenario.expect.no_data_value.empty())
    problems << "  (the metric declares that compute() with no data anywhere returns " << ctx.scenario.expect.no_data_value
             << ": that also holds only when every rank and the single process return the same value)\n";
  result.message = "expected_error failed: every rank must raise " + want + " at " + compute_phrase(ctx, k) + ", " +
                   hint + "\n" + problems.str() +
                   variant_lines(ctx);
  return result;
}

std::vector<PropertyResult> check_properties(const CheckContext& ctx) {
  std::vector<PropertyResult> results;
  for (const auto& property : property_table()) {
    if (!property.check || !ctx.scenario.checks(property.name)) continue;
    results.push_back(property.check(ctx, property.hint ? property.hint() : std::string()));
  }
  for (auto& result : results) {
    if (!ctx.scenario.expects_failure_of(result.name)) continue;
    const std::string why = ctx.scenario.expect.reason;
    if (result.outcome == Outcome::Fail) {
      result.outcome = Outcome::Pass;
      result.expected_failure = true;
      result.message = result.name + " failed, as the scenario expects (" + why + "):\n" + result.message;
    } else if (result.outcome == Outcome::Pass) {
      result.outcome = Outcome::Fail;
      result.message = result.name + " was expected to fail (" + why + ") but held: " + result.message + "\n" +
                       variant_lines(ctx);
    }
  }
  return results;
}

nlohmann::json reference_to_json(const SingleProcessReference& reference) {
  nlohmann::json at_compute = nlohmann::json::array();
  for (const auto& r : reference.at_compute) at_compute.push_back(r.to_json());
  nlohmann::json other = nlohmann::json::array();
  for (const auto& [size, r] : reference.other_batch_sizes) other.push_back({{"batch_size", size}, {"result", r.to_json()}});
  return {{"at_compute", at_compute}, {"full", reference.full.to_json()}, {"other_batch_sizes", other},
          {"failure", reference.failure}};
}

SingleProcessReference reference_from_json(const nlohmann::json& j) {
  SingleProcessReference reference;
  for (const auto& r : j.at("at_compute")) reference.at_compute.push_back(ComputeResult::from_json(r));
  reference.full = ComputeResult::from_json(j.at("full"));
  for (const auto& o : j.at("other_batch_sizes"))
    reference.other_batch_sizes.emplace_back(o.at("batch_size").get<std::int64_t>(), ComputeResult::from_json(o.at("result")));
  reference.failure = j.at("failure").get<std::string>();
  return reference;
}

}  // namespace distmetrics::harness
