// Root causes from the evidence of a variant's properties (root_cause.h).
#include "distmetrics/harness/root_cause.h"

#include "distmetrics/harness/input_dtype.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <set>
#include <sstream>

namespace distmetrics::harness {
namespace {

constexpr const char* kAcceptsEmptyBatch = "accepts_empty_batch";

// Relative differences up to this are what float32 arithmetic does to a sum of a few thousand
// terms (eps 1.2e-7 times a modest growth): rounding, not a wrong formula.
constexpr double kFloat32Scale = 2e-5;

const PropertyResult* find(const std::vector<PropertyResult>& results, const std::string& name) {
  for (const auto& p : results)
    if (p.name == name) return &p;
  return nullptr;
}

bool failed(const std::vector<PropertyResult>& results, const std::string& name) {
  const auto* p = find(results, name);
  return p && p->outcome == Outcome::Fail && !p->expected_failure;
}

// update_after_compute, or reset_replay where it compares with the single process (no earlier
// compute saw the same batches), failed where equal_to_single judged nothing: the first
// comparison with the single process failed, as equal_to_single's would (explore found
// "reset() leaves something behind" said of a maximum reduced with SUM). Null otherwise.
const char* first_comparison_with_single(const CheckContext& ctx, const std::vector<PropertyResult>& results) {
  const auto* fresh = find(results, "equal_to_single");
  if (fresh && fresh->outcome != Outcome::Skip) return nullptr;
  if (failed(results, "update_after_compute")) return "update_after_compute";
  if (!failed(results, "reset_replay")) return nullptr;
  for (const auto& point : ctx.plan.computes)
    if (point.role == ComputeRole::AfterReset && point.replay_of >= 0) return nullptr;
  return "reset_replay";
}

// The magnitude of a Value JSON number (a scalar, or a 1-element tensor); NaN otherwise.
double magnitude(const nlohmann::json& value) {
  if (value.is_number()) return std::fabs(value.get<double>());
  if (value.is_object() && value.contains("values")) {
    double largest = 0;
    std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& v) {
      if (v.is_number()) largest = std::max(largest, std::fabs(v.get<double>()));
      else if (v.is_array())
        for (const auto& x : v) walk(x);
    };
    walk(value.at("values"));
    return largest;
  }
  return NAN;
}

// Whether a failure's largest difference is within float32 rounding of its values.
bool within_float32_rounding(const PropertyResult& p) {
  if (!p.difference || !std::isfinite(*p.difference) || *p.difference == 0) return false;
  const double scale = magnitude(p.single);
  if (!std::isfinite(scale) || scale == 0) return false;
  return *p.difference / scale <= kFloat32Scale;
}

bool state_changed_by_compute(const CheckContext& ctx, int& rank, int& compute) {
  for (const auto& obs : ctx.ranks)
    for (const auto& c : obs.computes)
      if (!c.digest_before.empty() && !c.digest_after.empty() && c.digest_before != c.digest_after) {
        rank = obs.rank;
        compute = c.index;
        return true;
      }
  return false;
}

std::string number(double v) {
  std::ostringstream out;
  out << std::setprecision(3) << v;
  return out.str();
}

// Every failed property but the cause's own.
std::vector<std::string> others(const std::vector<PropertyResult>& results, const std::string& cause) {
  std::vector<std::string> names;
  for (const auto& p : results)
    if (p.outcome == Outcome::Fail && !p.expected_failure && p.name != cause && p.name != "no_hang" &&
        p.name != kAcceptsEmptyBatch)
      names.push_back(p.name);
  return names;
}

bool has_nan(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>() == "nan";
  if (v.is_number_float()) return std::isnan(v.get<double>());
  if (v.is_object() || v.is_array())
    for (const auto& item : v)
      if (has_nan(item)) return true;
  return false;
}

const char* property_judging(ComputeRole role) {
  switch (role) {
    case ComputeRole::Fresh: return "equal_to_single";
    case ComputeRole::Repeat: return "idempotent";
    case ComputeRole::AfterUpdate: return "update_after_compute";
    case ComputeRole::AfterReset: return "reset_replay";
  }
  return "equal_to_single";
}

// The first compute that is NaN on some rank where the single process (which takes no empty
// update) gives a NaN-free value, when an 'update empty' came before it since the last reset and
// no compute before that empty update was NaN: the empty batch put the NaN into the state (a mean
// of no values, 0/0), whatever property judges that compute.
struct NanAfterEmpty {
  int compute = -1;
  int empty_step = -1;
  std::vector<int> empty_ranks, nan_ranks;
};

std::optional<NanAfterEmpty> nan_after_an_empty_batch(const CheckContext& ctx) {
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
    NanAfterEmpty found;
    for (const auto& obs : ctx.ranks) {
      const auto* record = obs.compute(point.index);
      if (record && record->result.value && has_nan(*record->result.value)) found.nan_ranks.push_back(obs.rank);
    }
    if (found.nan_ranks.empty()) continue;
    // NaN where the single process has no NaN-free value, or before any empty batch: another cause.
    if (!single.value || single.raised() || has_nan(*single.value) || empty_step < 0) return std::nullopt;
    found.compute = point.index;
    found.empty_step = empty_step;
    found.empty_ranks = empty_ranks;
    return found;
  }
  return std::nullopt;
}

// Whether the values the single process gives at other batch sizes are noise rather than a
// formula: float32 results that change sign, jump by an order of magnitude or turn non-finite
// from one batching to the next. A per-batch statistic moves a value a little; the rounding left
// when nearly equal float32 sums are subtracted (a variance of a constant target: 0 in exact
// arithmetic) decides the whole value.
bool cancellation_noise(const CheckContext& ctx) {
  std::vector<const nlohmann::json*> values;
  std::vector<double> numbers;
  auto take = [&](const ComputeResult& r) {
    if (!r.value || r.raised()) return;
    values.push_back(&*r.value);
    if (r.value->is_number()) numbers.push_back(r.value->get<double>());
    else if (r.value->is_string())  // "nan", "inf", "-inf"
      numbers.push_back(*r.value == "nan" ? NAN : *r.value == "inf" ? INFINITY : -INFINITY);
  };
  take(ctx.single.full);
  for (const auto& [size, other] : ctx.single.other_batch_sizes) take(other);
  if (numbers.size() < 2 || observed_float_dtype(values) != "float32") return false;
  bool finite = false, non_finite = false, positive = false, negative = false;
  double smallest = INFINITY, largest = 0;
  for (double x : numbers) {
    if (!std::isfinite(x)) {
      non_finite = true;
      continue;
    }
    finite = true;
    if (x > 0) positive = true;
    if (x < 0) negative = true;
    smallest = std::min(smallest, std::fabs(x));
    largest = std::max(largest, std::fabs(x));
  }
  if (finite && non_finite) return true;
  if (positive && negative) return true;
  return finite && smallest > 0 && largest / smallest >= 10;
}

}  // namespace

nlohmann::json RootCause::to_json() const {
  return {{"property", property}, {"headline", headline}, {"evidence", evidence}, {"hint", hint},
          {"consequences", consequences}};
}

std::optional<RootCause> find_root_cause(const CheckContext& ctx, const std::vector<PropertyResult>& results) {
  std::vector<std::string> all_failed;
  for (const auto& p : results)
    if (p.outcome == Outcome::Fail && !p.expected_failure && p.name != "no_hang") all_failed.push_back(p.name);
  if (all_failed.empty()) return std::nullopt;
  RootCause cause;
  const int ws = ctx.variant.world_size;
  // An empty batch the metric rejects is its own finding: the rest of the script ran without
  // it, so the other failures have causes of their own. It leads only when nothing else failed.
  if (all_failed == std::vector<std::string>{kAcceptsEmptyBatch}) {
    const RankObservation* first = nullptr;
    std::string ranks;
    for (const auto& obs : ctx.ranks) {
      if (!obs.empty_rejected) continue;
      if (!first) first = &obs;
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(obs.rank);
    }
    cause.property = kAcceptsEmptyBatch;
    cause.headline = first ? "the metric rejects an empty batch: " + first->empty_rejected->type + ": " +
                                 first->empty_rejected->message.substr(0, first->empty_rejected->message.find('\n'))
                           : "the metric rejects an empty batch";
    cause.evidence = "update() of a batch with no rows raised on rank(s) " + ranks +
                     "; the rest of the script ran without the empty update and every other property held";
    cause.hint = "accept a batch with no rows and change nothing (a rank's last batch can be empty); a library "
                 "that rejects it by design declares that convention";
    return cause;
  }
  all_failed.erase(std::remove(all_failed.begin(), all_failed.end(), kAcceptsEmptyBatch), all_failed.end());
  if (const auto nan = nan_after_an_empty_batch(ctx); nan && failed(results, property_judging(ctx.plan.computes[nan->compute].role))) {
    const auto& point = ctx.plan.computes[nan->compute];
    auto list = [](const std::vector<int>& ranks) {
      std::string out;
      for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
      return out;
    };
    cause.property = property_judging(point.role);
    cause.headline = "an empty batch makes the result NaN: update() of a batch with no rows puts NaN into the state "
                     "(a mean of no values, 0/0)";
    cause.evidence = "compute " + std::to_string(nan->compute + 1) + " (script step " + std::to_string(point.step + 1) +
                     ") is NaN on rank(s) " + list(nan->nan_ranks) + ", the first compute after '" +
                     ctx.scenario.script.at(nan->empty_step).text + "' (script step " +
                     std::to_string(nan->empty_step + 1) + ", rank(s) " + list(nan->empty_ranks) +
                     "); the single process, which feeds no empty batch, gives a number, and no compute before it was NaN";
    cause.hint = "an empty batch must change nothing: return early when it has no rows, and accumulate sums and "
                 "counts rather than a mean of the batch";
    cause.consequences = others(results, cause.property);
    return cause;
  }

  int changed_rank = -1, changed_compute = -1;
  // A formula that depends on the batching is wrong for every world size too: it explains
  // differences between ranks and the single process, not the other way round.
  const bool per_batch =
      failed(results, "batch_invariant") && !within_float32_rounding(*find(results, "batch_invariant"));
  if (per_batch && cancellation_noise(ctx)) {
    cause.property = "batch_invariant";
    cause.headline = "float32 cancellation: the result is the rounding noise left when nearly equal float32 sums are "
                     "subtracted (e.g. the variance of a constant target, 0 in exact arithmetic)";
    cause.evidence = "batch_invariant failed with float32 values that change sign, turn non-finite or differ by an "
                     "order of magnitude from one batch size to another: noise, not a formula of the batching";
    cause.hint = "accumulate in float64, and compute variances from deviations (a two-pass or Welford update) rather "
                 "than E[x^2] - E[x]^2; a constant target has no variance: say so rather than divide by it";
  } else if (per_batch) {
    cause.property = "batch_invariant";
    cause.headline = "the result depends on the batch size: per-batch statistics";
    cause.evidence = "batch_invariant failed beyond float32 rounding (the single process alone, other batch sizes)";
    cause.hint = "accumulate sums and counts, never per-batch means or the batch's own statistics (PyTorch-Ignite "
                 "#2087, #1792); the same formula is then wrong for every world size";
  } else if (state_changed_by_compute(ctx, changed_rank, changed_compute)) {
    // The state digest is direct evidence: every later compute sees the damage.
    cause.property = "idempotent";
    cause.headline = "compute() changes the local state: the sync writes reduced values back (an in-place sync)";
    cause.evidence = "compute " + std::to_string(changed_compute + 1) + " changed rank " + std::to_string(changed_rank) +
                     "'s state digest";
    cause.hint = "sync copies of the states and leave the local ones untouched; later updates otherwise add to "
                 "already-reduced values (PyTorch-Ignite #2803)";
  } else if (failed(results, "equal_to_single")) {
    const bool disagree = failed(results, "ranks_agree");
    cause.property = "equal_to_single";
    if (disagree) {
      cause.headline = "no sync: the ranks return different values, each from its own shard";
      cause.evidence = "equal_to_single and ranks_agree failed at world size " + std::to_string(ws);
      cause.hint = "compute() must reduce every state across ranks (through the communicator) before it computes";
    } else if (within_float32_rounding(*find(results, "equal_to_single"))) {
      cause.headline = "float32 rounding: every rank agrees, within float32 precision of the single-process value";
      cause.evidence = "equal_to_single failed by a relative difference of " +
                       number(*find(results, "equal_to_single")->difference / magnitude(find(results, "equal_to_single")->single)) +
                       ", ranks agree";
      cause.hint = "keep sums and the collectives that carry them in float64 (or int64 for counts): float32 loses "
                   "precision beyond 2^24 (PyTorch-Ignite PR #2959)";
    } else {
      cause.headline = ws > 1 ? "the sync reduces wrongly: every rank agrees on a value the single process does not give"
                              : "the metric's result depends on how the data was fed (world size 1 differs from the single process)";
      cause.evidence = "equal_to_single failed at world size " + std::to_string(ws) + ", ranks_agree held";
      cause.hint = "check each state's reduction: a maximum or minimum reduced with SUM (PyTorch-Ignite #1813), a sum "
                   "not divided by the world size (#991), a mean of per-rank means, a per-sample history all_reduced "
                   "(#1283)";
    }
  } else if (const char* first = first_comparison_with_single(ctx, results)) {
    // No compute before it was compared with the single process: nothing says the sync was right.
    cause.property = first;
    cause.headline = ctx.variant.world_size > 1
                         ? "the ranks differ from the single process at the first compute compared with it (no "
                           "earlier compute shows the sync right)"
                         : "the metric's result differs from the single process at the first compute compared with it";
    cause.evidence = std::string(first) + " failed against the single process; equal_to_single judged no compute (the "
                     "script has no compute before every other compute), so no earlier compute shows the sync right";
    cause.hint = "first check what equal_to_single would: each state's reduction (a maximum reduced with SUM, "
                 "PyTorch-Ignite #1813; a sum not divided by the world size, #991); a script with a compute before "
                 "any reset or other compute tells the two apart";
  } else if (failed(results, "update_after_compute")) {
    cause.property = "update_after_compute";
    cause.headline = "an earlier compute changes what a later one gives, though the state digest is unchanged";
    cause.evidence = "equal_to_single held at the first compute; update_after_compute failed";
    cause.hint = "a cache or an 'already synced' flag kept across computes (PyTorch-Ignite #2800, torchmetrics #2570), "
                 "or state the digest does not cover";
  } else if (failed(results, "idempotent")) {
    cause.property = "idempotent";
    cause.headline = "a second compute() gives another result, though the state digest is unchanged";
    cause.evidence = "idempotent failed on the values";
    cause.hint = "a cache or an 'already reduced' flag (PyTorch-Ignite #2800, torchmetrics #2570)";
  } else if (failed(results, "reset_replay")) {
    cause.property = "reset_replay";
    cause.headline = "reset() leaves something behind: the same data after a reset gives another result";
    cause.evidence = "only reset_replay failed";
    cause.hint = "reset() must restore every state (and any cache or flag) to its initial value";
  } else if (failed(results, "batch_invariant")) {  // within float32 rounding (per_batch above otherwise)
    cause.property = "batch_invariant";
    cause.headline = "float32 rounding: other batch sizes agree within float32 precision";
    cause.evidence = "batch_invariant failed by a relative difference of at most " +
                     number(*find(results, "batch_invariant")->difference / magnitude(find(results, "batch_invariant")->single));
    cause.hint = "accumulate in float64 (the formula itself does not depend on the batch size), or widen the "
                 "scenario's tolerance for float32 data";
  } else if (failed(results, "state_roundtrip")) {
    cause.property = "state_roundtrip";
    cause.headline = "the saved state does not restore the metric: an instance loaded from it gives other results";
    cause.evidence = "state_roundtrip failed";
    cause.hint = "save every state, gathered rows included (torchmetrics: a state not declared persistent is left out "
                 "of state_dict()), and load each one back";
  } else if (failed(results, "merge_state")) {
    cause.property = "merge_state";
    cause.headline = "merging the ranks' states gives another result than the distributed compute";
    cause.evidence = "merge_state failed";
    cause.hint = "merge_state must keep its own state and combine each state with the reduction its sync uses";
  } else {
    cause.property = all_failed.front();
    const auto* p = find(results, cause.property);
    const auto newline = p->message.find('\n');
    cause.headline = p->message.substr(0, newline);
    cause.evidence = cause.property + " failed";
  }
  cause.consequences = others(results, cause.property);
  // The cause's own property may have held (e.g. an in-place sync caught only later): it is
  // then not listed as failed, and its evidence line says what was seen.
  return cause;
}

namespace {
// A property that failed alone (golden, agrees_with_reference) has its hint in its own message.
std::string hint_line(const RootCause& cause) { return cause.hint.empty() ? "" : "\n  hint: " + cause.hint; }
}  // namespace

void apply_root_cause(Verdict& verdict, const RootCause& cause) {
  verdict.root_cause = cause.to_json();
  verdict.reason = "root cause: " + cause.headline;
  const std::set<std::string> consequences(cause.consequences.begin(), cause.consequences.end());
  for (auto& p : verdict.properties) {
    if (p.name == cause.property && p.outcome == Outcome::Fail) {
      p.message = "root cause: " + cause.headline + "\n  evidence: " + cause.evidence + hint_line(cause) +
                  (cause.consequences.empty() ? std::string() : "\n  consequences: " + [&] {
                    std::string list;
                    for (const auto& c : cause.consequences) list += (list.empty() ? "" : ", ") + c;
                    return list;
                  }()) +
                  "\n" + p.message;
    } else if (consequences.count(p.name)) {
      p.consequence_of = cause.property;
      p.message = "  (a consequence of the root cause above, " + cause.property + ") " + p.message;
    }
  }
  // The cause first (after no_hang), then its consequences, then the rest, each in their order.
  auto rank_of = [&](const PropertyResult& p) {
    if (p.name == "no_hang") return 0;
    if (p.name == cause.property) return 1;
    if (consequences.count(p.name)) return 2;
    return 3;
  };
  std::stable_sort(verdict.properties.begin(), verdict.properties.end(),
                   [&](const PropertyResult& a, const PropertyResult& b) { return rank_of(a) < rank_of(b); });
  if (!std::any_of(verdict.properties.begin(), verdict.properties.end(),
                   [&](const PropertyResult& p) { return p.name == cause.property && p.outcome == Outcome::Fail; })) {
    // The cause's property held (the in-place sync caught later): lead the first consequence.
    for (auto& p : verdict.properties) {
      if (p.outcome != Outcome::Fail || p.name == "no_hang") continue;
      p.message = "root cause: " + cause.headline + "\n  evidence: " + cause.evidence + hint_line(cause) + "\n" + p.message;
      break;
    }
  }
}

std::optional<AbandonedWait> find_abandoned_wait(const std::vector<RankObservation>& ranks) {
  std::vector<const RankObservation*> timeouts, raisers, leavers;
  for (const auto& obs : ranks) {
    if (!obs.error) leavers.push_back(&obs);
    else if (is_wait_timeout(obs.error->type, obs.error->message)) timeouts.push_back(&obs);
    else raisers.push_back(&obs);
  }
  if (timeouts.empty() || timeouts.size() == ranks.size()) return std::nullopt;
  double first_timeout = timeouts.front()->error->at;
  for (const auto* t : timeouts) first_timeout = std::min(first_timeout, t->error->at);
  // A raise that precedes the first timeout is the cause; one after it may be its consequence.
  const RankObservation* culprit = nullptr;
  for (const auto* r : raisers)
    if (r->error->at <= first_timeout && (!culprit || r->error->at < culprit->error->at)) culprit = r;
  AbandonedWait blame;
  for (const auto* t : timeouts) blame.waiting.push_back(t->rank);
  std::string waiting;
  for (std::size_t i = 0; i < blame.waiting.size(); ++i)
    waiting += (i ? (i + 1 == blame.waiting.size() ? " and " : ", ") : "") + std::to_string(blame.waiting[i]);
  const std::string waiters = (blame.waiting.size() == 1 ? "rank " : "ranks ") + waiting;
  std::ostringstream head;
  if (culprit) {
    const auto& e = *culprit->error;
    blame.blamed = culprit->rank;
    head << "rank " << culprit->rank << " raised " << e.type << " at " << e.op << " (script step " << e.step + 1
         << ") and left the script; " << waiters << " waited for it until " << (blame.waiting.size() == 1 ? "its" : "their")
         << " wait timed out " << number(first_timeout - e.at) << " s later";
  } else if (!leavers.empty()) {
    blame.blamed = leavers.front()->rank;
    head << "rank " << blame.blamed << " finished its script without entering the collective that " << waiters
         << " waited in until " << (blame.waiting.size() == 1 ? "its" : "their") << " wait timed out";
  } else {
    return std::nullopt;
  }
  blame.headline = head.str();
  // Every error, in the order it happened.
  std::vector<const RankObservation*> by_time;
  for (const auto& obs : ranks)
    if (obs.error) by_time.push_back(&obs);
  std::stable_sort(by_time.begin(), by_time.end(), [](auto* a, auto* b) { return a->error->at < b->error->at; });
  std::ostringstream detail;
  detail << blame.headline << ".\nA rank must never raise or return alone while its peers wait: decide errors such as "
         << "'no samples' from synced state, so that every rank raises together (PyTorch-Ignite #1242); this holds for "
         << "collectives a metric issues itself on the process group too.\nin the order they happened:\n";
  const double t0 = by_time.empty() ? 0 : by_time.front()->error->at;
  for (const auto* obs : by_time) {
    const auto& e = *obs->error;
    detail << "  +" << number(e.at - t0) << " s  rank " << obs->rank << " raised " << e.type << " at " << e.op
           << " (script step " << e.step + 1 << ")";
    if (!e.where.empty()) detail << ", raised from " << e.where;
    detail << ": " << e.message.substr(0, e.message.find('\n')) << "\n";
  }
  for (const auto* obs : leavers) detail << "  rank " << obs->rank << " finished its script\n";
  blame.detail = detail.str();
  if (!blame.detail.empty() && blame.detail.back() == '\n') blame.detail.pop_back();
  return blame;
}

}  // namespace distmetrics::harness
