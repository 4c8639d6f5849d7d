// accepts_empty_batch: update() of a batch with no rows ('update empty') is accepted on every
// rank that feeds one. When it raises, the rank records it and runs the rest of its script
// without that (and any later) empty update (variants/scenario_task.cpp), so that every other
// property still judges the distributed result: its own finding, never another's consequence.
#include <cmath>
#include <sstream>

#include "checking.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness::properties {
namespace {
namespace DISTMETRICS_UNITY_ID {

using namespace checking;

constexpr const char* kName = "accepts_empty_batch";

PropertyResult check(const CheckContext& ctx, const std::string& hint) {
  PropertyResult result;
  result.name = kName;
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
    RankLine line;
    line.rank = obs.rank;
    line.text = "script step " + std::to_string(e.step + 1) + " ('" + ctx.scenario.script.at(e.step).text + "') raised " +
                e.type + ": " + runtime::first_line(e.message);
    line.error = e;
    lines << "  rank " << line.rank << ": " << line.text << "\n";
    result.lines.push_back(std::move(line));
  }
  if (!first) {
    // Nothing fed is nothing judged: a metric that declares it takes no batch of no rows was not
    // given one, so this property is not applicable to it (shown as such, never as held).
    for (const auto& obs : ctx.ranks) {
      if (obs.empty_not_fed.empty()) continue;
      return not_applicable(kName, runtime::first_line(obs.empty_not_fed));
    }
    result.message = "accepts_empty_batch held: every rank that called update() with an empty batch went on";
    return result;
  }
  result.outcome = Outcome::Fail;
  result.message = "accepts_empty_batch failed: rank " + std::to_string(first_rank) + " rejects an empty batch (" +
                   first->type + ": " + runtime::first_line(first->message) + "); " + hint + "\n" +
                   lines.str();
  result.variant_lines = variant_lines(ctx);
  return result;
}

// It leads only when nothing else failed: the rest of the script ran without the empty update,
// so the other failures have causes of their own.
std::optional<RootCause> rejects_an_empty_batch(const Evidence& e) {
  if (e.failed_properties() != std::vector<std::string>{kName}) return std::nullopt;
  const RankObservation* first = nullptr;
  std::vector<int> rejected;
  for (const auto& obs : e.ctx.ranks) {
    if (!obs.empty_rejected) continue;
    if (!first) first = &obs;
    rejected.push_back(obs.rank);
  }
  RootCause cause;
  cause.property = kName;
  cause.headline = first ? "the metric rejects an empty batch: " + first->empty_rejected->type + ": " +
                               runtime::first_line(first->empty_rejected->message)
                         : "the metric rejects an empty batch";
  cause.evidence = "update() of a batch with no rows raised on rank(s) " + rank_numbers(rejected) +
                   "; the rest of the script ran without the empty update and every other property held";
  cause.hint = "accept a batch with no rows and change nothing (a rank's last batch can be empty); a library "
               "that rejects it by design declares that convention";
  return cause;
}

bool has_nan(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>() == "nan";
  if (v.is_number_float()) return std::isnan(v.get<double>());
  if (v.is_object() || v.is_array())
    for (const auto& item : v)
      if (has_nan(item)) return true;
  return false;
}

std::string list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

// The first compute that is NaN on some rank where the single process (which takes no empty
// update) gives a NaN-free value, when an 'update empty' came before it since the last reset and
// no compute before that empty update was NaN: the empty batch put the NaN into the state (a mean
// of no values, 0/0), whatever property judges that compute.
std::optional<RootCause> empty_batch_makes_nan(const Evidence& e) {
  const auto& ctx = e.ctx;
  int empty_step = -1;
  std::vector<int> empty_ranks;
  std::size_t next_step = 0;
  for (const auto& point : ctx.plan.computes) {
    for (; next_step < ctx.plan.steps.size() && static_cast<int>(next_step) <= point.step; ++next_step) {
      const auto& action = ctx.plan.steps[next_step];
      if (action.op == Step::Op::Reset) {
        empty_step = -1;
        empty_ranks.clear();
      }
      if (action.empty_update.empty() || empty_step >= 0) continue;
      for (std::size_t r = 0; r < action.empty_update.size(); ++r)
        if (action.empty_update[r]) empty_ranks.push_back(static_cast<int>(r));
      if (!empty_ranks.empty()) empty_step = static_cast<int>(next_step);
    }
    const auto& single = point.index < static_cast<int>(ctx.single.at_compute.size())
                             ? ctx.single.at_compute[point.index] : ComputeResult{};
    std::vector<int> nan_ranks;
    for (const auto& obs : ctx.ranks) {
      const auto* record = obs.compute(point.index);
      if (record && record->result.value && has_nan(*record->result.value)) nan_ranks.push_back(obs.rank);
    }
    if (nan_ranks.empty()) continue;
    // NaN where the single process has no NaN-free value, or before any empty batch: another cause.
    if (!single.value || single.raised() || has_nan(*single.value) || empty_step < 0) return std::nullopt;
    const Property* judging = property_judging(point.role);
    if (!judging || !e.failed(judging->name)) return std::nullopt;
    RootCause cause;
    cause.property = judging->name;
    cause.headline = "an empty batch makes the result NaN: update() of a batch with no rows puts NaN into the state "
                     "(a mean of no values, 0/0)";
    cause.evidence = "compute " + std::to_string(point.index + 1) + " (script step " + std::to_string(point.step + 1) +
                     ") is NaN on rank(s) " + list(nan_ranks) + ", the first compute after '" +
                     ctx.scenario.script.at(empty_step).text + "' (script step " + std::to_string(empty_step + 1) +
                     ", rank(s) " + list(empty_ranks) +
                     "); the single process, which feeds no empty batch, gives a number, and no compute before it was NaN";
    cause.hint = "an empty batch must change nothing: return early when it has no rows, and accumulate sums and "
                 "counts rather than a mean of the batch";
    return cause;
  }
  return std::nullopt;
}

// Whether the metric takes that batch is judged whenever the script has an 'update empty'.
bool feeds_an_empty_batch(const Scenario& s) {
  return std::any_of(s.script.begin(), s.script.end(),
                     [](const Step& step) { return step.op == Step::Op::Update && step.amount == Step::Amount::Empty; });
}

// Its evidence: every 'update empty' of the plan (whether each rank that fed one went on).
int last_empty_update(const CheckContext& ctx) {
  int last = -1;
  for (std::size_t s = 0; s < ctx.plan.steps.size(); ++s)
    for (bool empty : ctx.plan.steps[s].empty_update)
      if (empty) last = static_cast<int>(s);
  return last;
}

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

// Last in the table: a failure of the distributed properties names the verdict before this one.
Property accepts_empty_batch() {
  using namespace DISTMETRICS_UNITY_ID;
  Property p;
  p.name = kName;
  p.holds_when =
      "`update()` of a batch with no rows (`update empty`) is accepted; when it raises, the rest of the script runs "
      "without it, so that every other property is still judged";
  p.label = "empty";
  p.column_order = 11;
  p.checked_anyway = feeds_an_empty_batch;
  p.check = check;
  p.hint = "update() of a batch with no rows must be accepted and change nothing (a rank's last batch, or a filter, "
           "can leave it empty); the rest of the script ran without the empty update, so the other properties judge "
           "the distributed result as if the script had none";
  p.own_finding = true;
  p.last_evidence_step = last_empty_update;
  p.root_causes = {{10, rejects_an_empty_batch}, {20, empty_batch_makes_nan}};
  return p;
}

}  // namespace distmetrics::harness::properties
