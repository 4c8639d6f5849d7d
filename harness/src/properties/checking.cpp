// What the property checkers share (checking.h).
#include "checking.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "distmetrics/harness/input_dtype.h"

namespace distmetrics::harness::checking {

using nlohmann::json;

std::optional<ComputeResult> optional_result(const ComputeResult* r) {
  return r ? std::optional<ComputeResult>(*r) : std::nullopt;
}

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

namespace {

// A rank's result at a compute against what it must equal.
struct Compared {
  const ComputeResult* actual = nullptr;
  const ComputeResult* expected = nullptr;
  Comparison cmp;
  std::string missing;
};

}  // namespace

PropertyResult judge(const CheckContext& ctx, const std::string& name, const std::vector<int>& ks,
                     const ExpectedFor& expected_for, const Tolerance& tol, const std::string& expected_label,
                     const std::string& what_it_means,
                     const std::function<const ComputeResult*(const ComputeRecord&)>& actual_of) {
  PropertyResult result;
  result.name = name;
  double largest = 0;
  for (int k : ks) {
    std::vector<Compared> lines(ctx.ranks.size());
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
    result.single = optional_result(single);
    result.values.clear();
    for (const auto& line : lines) result.values.push_back(optional_result(line.actual));
    if (!failed) continue;
    result.outcome = Outcome::Fail;
    std::ostringstream msg;
    msg << name << " failed at " << compute_phrase(ctx, k) << ": " << what_it_means << "\n";
    msg << "  single process: " << (single ? single->text() : "none") << "\n";
    double worst = 0;
    bool numeric = true;
    for (std::size_t r = 0; r < lines.size(); ++r) {
      const auto& line = lines[r];
      harness::RankLine shown;
      shown.rank = static_cast<int>(r);
      if (!line.actual) {
        shown.text = line.missing;
        numeric = false;
      } else {
        shown.text = line.actual->text();
        if (line.expected) {
          if (expected_label != "single process") shown.text += "   (" + expected_label + ": " + line.expected->text() + ")";
          if (line.actual->raised() || line.expected->raised()) {
            numeric = false;
          } else {
            shown.text += "   difference " + number_text(line.cmp.difference);
            shown.difference = line.cmp.difference;
            worst = std::max(worst, line.cmp.difference);
          }
          if (!line.cmp.equal) {
            shown.text += "   <- differs" + (line.cmp.detail.empty() ? "" : ": " + line.cmp.detail);
            shown.differs = true;
          }
        }
      }
      msg << "  rank " << r << ": " << shown.text << "\n";
      result.lines.push_back(std::move(shown));
    }
    result.tolerance = tolerance_text(tol);
    msg << "  tolerance: " << result.tolerance << "\n";
    result.message = msg.str();
    result.variant_lines = variant_lines(ctx);
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

const ComputeResult* own_result(const CheckContext& ctx, int rank, int k) {
  const auto* record = ctx.ranks[rank].compute(k);
  return record ? &record->result : nullptr;
}

const ComputeResult* probed(const ComputeRecord& record, const std::string& property) {
  const auto it = record.probed.find(property);
  return it == record.probed.end() ? nullptr : &it->second;
}

int last_full_data_step(const CheckContext& ctx) {
  int last = -1;
  for (const auto& point : ctx.plan.computes)
    if (point.all_data) last = std::max(last, point.step);
  return last;
}

std::vector<int> computes_probed(const CheckContext& ctx, const std::string& property) {
  std::vector<int> ks;
  for (const auto& point : ctx.plan.computes)
    for (const auto& obs : ctx.ranks)
      if (const auto* record = obs.compute(point.index); record && probed(*record, property)) {
        ks.push_back(point.index);
        break;
      }
  return ks;
}

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
  result.single = ctx.single.full;
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
    for (const auto& obs : ctx.ranks)
      result.values.push_back(obs.compute(full.back()) ? std::optional<ComputeResult>(obs.compute(full.back())->result)
                                                       : std::nullopt);
  result.difference = largest;
  if (problems.str().empty()) {
    result.message = name + " held: the result on all the data is " + expected.text() +
                     (full.empty() ? " (single process; no compute saw all the data on the ranks)"
                                   : " (single process, and every rank at each compute that saw all the data)") +
                     (widened_by.empty() ? "" : "; tolerance " + tol_text);
    return result;
  }
  result.outcome = Outcome::Fail;
  result.tolerance = tol_text;
  result.message = name + " failed: " + hint + "\n  " + label + ": " + expected.text() + "\n" + problems.str() +
                   "  tolerance: " + tol_text + "\n";
  result.variant_lines = variant_lines(ctx);
  return result;
}

}  // namespace distmetrics::harness::checking
