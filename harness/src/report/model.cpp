// The report model built from a run's verdicts (report_model.h).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>
#include <stdexcept>

#include "distmetrics/build_config.h"
#include "distmetrics/harness/compare.h"
#include "distmetrics/harness/number_text.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/harness/report_model.h"
#include "distmetrics/runtime/desync.h"
#include "text.h"

namespace distmetrics::harness {
namespace {

using nlohmann::json;

std::string anchor_of(const std::string& prefix, const std::string& text) {
  std::string out = prefix;
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  return out;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// What a property's result shows: a value's text, or none (no value, or it raised).
std::optional<std::string> shown_value(const std::optional<ComputeResult>& r) {
  if (!r || !r->value || r->raised()) return std::nullopt;
  return value_text(*r->value);
}

// A failed property as the views show it: its values and its message's per-rank lines, side by
// side from rank 0 for as long as the one or the other has a rank.
Finding finding_of(const PropertyResult& p, const std::vector<RankReport>& ranks) {
  Finding f;
  f.property = p.name;
  f.headline = p.headline();
  f.message = p.shown_message();
  f.single = shown_value(p.single).value_or("none");
  if (p.difference && std::isfinite(*p.difference)) f.difference = *p.difference;
  f.tolerance = p.tolerance;
  std::map<int, const RankLine*> lines;
  for (const auto& line : p.lines) lines[line.rank] = &line;
  for (std::size_t r = 0; r < p.values.size() || lines.count(static_cast<int>(r)); ++r) {
    RankValue rv;
    rv.rank = static_cast<int>(r);
    const RankLine* line = lines.count(rv.rank) ? lines[rv.rank] : nullptr;
    const auto value = r < p.values.size() ? shown_value(p.values[r]) : std::nullopt;
    rv.value = value ? *value : line ? line->first_line() : "";
    if (line) rv.difference = line->difference;
    rv.differs = (line && line->differs) || !value;
    if (r < ranks.size()) {
      rv.samples = ranks[r].samples;
      rv.batches = ranks[r].batches;
    }
    f.ranks.push_back(std::move(rv));
  }
  return f;
}

// Each rank's collectives as timeline cells and as records, by sequence number.
struct RankTraces {
  std::vector<std::map<std::uint64_t, TimelineCell>> cells;
  std::vector<std::map<std::uint64_t, runtime::CollectiveRecord>> records;
  std::uint64_t longest = 0;  // one past the largest sequence number
  bool any = false;
};

RankTraces traces_of(const std::vector<RankReport>& ranks, Timeline& t) {
  RankTraces traces;
  for (const auto& r : ranks) {
    t.ranks.push_back(r.rank);
    t.states.push_back(runtime::to_string(r.state));
    t.errors.push_back(r.error);
    std::map<std::uint64_t, TimelineCell> cells;
    std::map<std::uint64_t, runtime::CollectiveRecord> issued;
    for (const auto& c : r.trace) {
      TimelineCell cell;
      cell.present = true;
      cell.op = c.op;
      cell.dtype = c.dtype;
      cell.shape = shape_text(c.shape);
      cell.script_step = c.script_step;
      cell.step_text = c.step_text;
      cell.blocked = r.blocked_in && *r.blocked_in == c.seq;
      cells[c.seq] = cell;
      runtime::CollectiveRecord record;
      record.seq = c.seq;
      record.op = c.op;
      record.dtype = c.dtype;
      record.shape = c.shape;
      issued[c.seq] = record;
      traces.longest = std::max(traces.longest, c.seq + 1);
      traces.any = true;
    }
    traces.cells.push_back(std::move(cells));
    traces.records.push_back(std::move(issued));
  }
  return traces;
}

// The blamed ranks' cells of the step where they broke the pattern; on an even split, both
// sides' (as parted).
void mark_deviation(const Deviation& d, const Timeline& t, RankTraces& traces) {
  auto has = [](const std::vector<int>& ranks, int r) { return std::find(ranks.begin(), ranks.end(), r) != ranks.end(); };
  for (std::size_t i = 0; i < t.ranks.size(); ++i) {
    const int rank = t.ranks[i];
    const bool blamed = has(d.blamed, rank), even = d.blamed.empty();
    if (!blamed && !even) continue;
    if (has(d.more, rank)) {
      // What it issued in that step from the parting collective on.
      for (auto& [seq, cell] : traces.cells[i])
        if (seq >= d.seq && cell.script_step == d.script_step) (blamed ? cell.deviates : cell.parted) = true;
    } else if (has(d.fewer, rank)) {
      // The place of the collective it passed the step without: what it issued there instead, or none.
      auto& cell = traces.cells[i][d.seq];
      (blamed ? cell.deviates : cell.parted) = true;
    }
  }
}

// The first seq where a rank issued another collective than rank 0's first (or none where
// another issued one).
std::optional<std::uint64_t> divergence_of(const RankTraces& traces) {
  for (std::uint64_t seq = 0; seq < traces.longest; ++seq) {
    const runtime::CollectiveRecord* first = nullptr;
    bool first_seen = false;
    bool differs = false;
    for (const auto& issued : traces.records) {
      const auto it = issued.find(seq);
      const runtime::CollectiveRecord* mine = it == issued.end() ? nullptr : &it->second;
      if (!first_seen) {
        first = mine;
        first_seen = true;
      } else if ((first == nullptr) != (mine == nullptr) || (first && !runtime::same_collective(*first, *mine))) {
        differs = true;
      }
    }
    if (differs) return seq;
  }
  return std::nullopt;
}

// Long traces: a few rows before the divergence and after it (or the last ones), not thousands.
void window_rows(const RankTraces& traces, Timeline& t) {
  constexpr std::uint64_t kBefore = 8, kAfter = 3;
  const std::uint64_t longest = traces.longest;
  const std::uint64_t focus = t.divergence.value_or(longest - 1);
  const std::uint64_t first = t.deviation ? std::min(focus, t.deviation->seq) : focus;
  const std::uint64_t last = t.deviation ? std::max(focus, t.deviation->seq) : focus;
  const std::uint64_t from = first > kBefore ? first - kBefore : 0;
  const std::uint64_t to = std::min(longest, last + kAfter + 1);
  t.omitted = static_cast<std::size_t>(from);
  t.omitted_after = static_cast<std::size_t>(longest - to);
  for (std::uint64_t seq = from; seq < to; ++seq) {
    t.seqs.push_back(seq);
    std::vector<TimelineCell> row;
    for (const auto& cells : traces.cells) {
      const auto it = cells.find(seq);
      row.push_back(it == cells.end() ? TimelineCell{} : it->second);
    }
    t.rows.push_back(std::move(row));
  }
}

// The collectives of every rank side by side; the first sequence number at which they differ
// (a rank issued another collective, or none; runtime::same_collective: the shapes of a gather
// may differ) is the divergence. With a deviation (a desync judged per script step), the blamed
// ranks' cells of the step where they broke the pattern are marked.
std::optional<Timeline> timeline_of(const std::vector<RankReport>& ranks, const std::optional<Deviation>& deviation) {
  if (ranks.empty()) return std::nullopt;
  Timeline t;
  RankTraces traces = traces_of(ranks, t);
  if (!traces.any) return std::nullopt;
  if (deviation) {
    mark_deviation(*deviation, t, traces);
    t.deviation = *deviation;
  }
  t.divergence = divergence_of(traces);
  window_rows(traces, t);
  return t;
}

// The report's line of one verdict; the properties it names join `seen` in order.
ReportVariant report_variant(const Verdict& v, std::size_t i, const ReportLayout& layout, std::vector<std::string>& seen) {
  ReportVariant rv;
  rv.verdict = v;
  rv.index = i;
  rv.id = v.variant.id;
  rv.outcome = to_string(v.outcome);
  rv.scenario = v.variant.scenario;
  rv.row = layout.by_metric ? layout.metrics[i] : rv.scenario;
  if (!layout.sources.empty()) rv.source = layout.sources[i];
  rv.file = v.variant.file;
  rv.backend = v.variant.backend;
  rv.world_size = v.variant.world_size;
  rv.shard = v.variant.shard;
  rv.placement = v.variant.placement;
  rv.reason = v.reason;
  rv.reproduce = v.variant.reproduce();
  rv.diagnosis = v.diagnosis;
  rv.seconds = v.seconds;
  rv.anchor = anchor_of("v-", rv.id);
  for (const auto& p : v.properties) {
    if (std::find(seen.begin(), seen.end(), p.name) == seen.end()) seen.push_back(p.name);
    if (p.outcome == Outcome::Fail) rv.findings.push_back(finding_of(p, v.ranks));
  }
  for (const auto& r : v.ranks) {
    RankValue counts;
    counts.rank = r.rank;
    counts.samples = r.samples;
    counts.batches = r.batches;
    rv.rank_counts.push_back(counts);
  }
  if (!rv.passed() && rv.outcome != "fail") rv.timeline = timeline_of(v.ranks, v.deviation);  // hang, crash, memory, error
  rv.details = rv.passed() ? "" : v.details();
  return rv;
}

// Each variant's outcome per column. A variant that hung, crashed, raised or was skipped has
// that outcome in every column its row checks (in conform's matrix, in every column): none of
// its properties could be judged.
void variant_cells(ReportModel& model, const std::vector<std::size_t>& members, const std::vector<Verdict>& verdicts,
                   const ReportLayout& layout) {
  std::vector<bool> row_checks(model.columns.size(), false);
  for (std::size_t c = 0; c < model.columns.size(); ++c)
    for (std::size_t i : members)
      if (verdicts[i].property(model.columns[c])) row_checks[c] = true;
  for (std::size_t i : members) {
    auto& rv = model.variants[i];
    const Verdict& v = verdicts[i];
    for (std::size_t c = 0; c < model.columns.size(); ++c) {
      const std::string& column = model.columns[c];
      std::string cell;
      if (layout.by_metric) {
        cell = matrix_cell(v, column);
      } else if (v.outcome == Outcome::Pass || v.outcome == Outcome::Fail) {
        for (const auto& p : v.properties)
          if (p.name == column) cell = to_string(p.outcome);
      } else if (row_checks[c] || c == 0) {
        cell = rv.outcome;
      }
      rv.cells.emplace_back(column, cell);
    }
  }
}

// A row's cell per column (its variants' outcomes there counted), and the row's own counts.
void count_row(const ReportModel& model, const std::vector<std::size_t>& members, ReportRow& row) {
  for (std::size_t c = 0; c < model.columns.size(); ++c) {
    ReportCell cell;
    cell.anchor = anchor_of("cell-", row.name + "-" + model.columns[c]);
    for (std::size_t i : members) {
      const std::string& outcome = model.variants[i].cells[c].second;
      if (outcome.empty()) continue;
      cell.variants.push_back(i);
      if (outcome == "skip") {
        ++cell.skipped;
        continue;
      }
      ++cell.ran;
      if (outcome != "pass") ++cell.bad;
      if (cell.worst.empty() || outcome_severity(outcome) > outcome_severity(cell.worst)) cell.worst = outcome;
    }
    if (cell.worst.empty() && cell.skipped) cell.worst = "skip";
    row.cells.push_back(std::move(cell));
  }
  for (std::size_t i : members) {
    const auto& rv = model.variants[i];
    ++row.variants;
    if (rv.outcome == "skip") {
      ++row.skipped;
      continue;
    }
    ++row.ran;
    if (rv.outcome != "pass") ++row.bad;
    if (row.worst.empty() || outcome_severity(rv.outcome) > outcome_severity(row.worst)) row.worst = rv.outcome;
  }
  if (row.worst.empty()) row.worst = "skip";
}

// The worst outcome of the variants that ran; the skips grouped by their gist, the largest
// group first.
void worst_and_skips(ReportModel& model) {
  for (const auto& v : model.variants) {
    if (v.outcome != "skip" && (model.worst.empty() || outcome_severity(v.outcome) > outcome_severity(model.worst)))
      model.worst = v.outcome;
    if (v.outcome != "skip") continue;
    const std::string& gist = v.verdict.skip_gist.empty() ? v.reason : v.verdict.skip_gist;
    auto group = std::find_if(model.skips.begin(), model.skips.end(), [&](const auto& g) { return g.reason == gist; });
    if (group == model.skips.end()) group = model.skips.insert(model.skips.end(), SkipGroup{gist, 0, {}});
    ++group->count;
    auto full = std::find_if(group->reasons.begin(), group->reasons.end(), [&](const auto& r) { return r.first == v.reason; });
    if (full == group->reasons.end()) group->reasons.emplace_back(v.reason, 1);
    else ++full->second;
  }
  std::stable_sort(model.skips.begin(), model.skips.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
}

void check_layout(const ReportLayout& layout, std::size_t verdicts) {
  if (layout.by_metric && layout.metrics.size() != verdicts)
    throw std::invalid_argument("report_model: " + std::to_string(layout.metrics.size()) + " metrics for " +
                                std::to_string(verdicts) + " verdicts");
  if (!layout.sources.empty() && layout.sources.size() != verdicts)
    throw std::invalid_argument("report_model: " + std::to_string(layout.sources.size()) + " sources for " +
                                std::to_string(verdicts) + " verdicts");
}

}  // namespace

std::string ReportCell::counts() const {
  if (ran == 0) return skipped ? std::to_string(skipped) + " skipped" : "";
  if (bad == 0) return std::to_string(ran) + "/" + std::to_string(ran) + " pass";
  return std::to_string(bad) + "/" + std::to_string(ran) + " " + worst;
}

std::string ReportCounts::line() const {
  return OutcomeCounts::line() + " in " + fixed_text(seconds, 1) + " s";
}

std::vector<const ReportVariant*> ReportModel::not_passed() const {
  std::vector<const ReportVariant*> out;
  for (const auto& v : variants)
    if (!v.passed()) out.push_back(&v);
  return out;
}

std::string ReportModel::verdict() const {
  const int skips = counts.of(Outcome::Skip);
  const int ran = counts.total - skips;
  const int bad = counts.not_passed();
  const std::string skipped = skips ? "; " + std::to_string(skips) + " skipped" : "";
  if (counts.total == 0) return "NOTHING RAN: no variant matched the selection";
  if (ran == 0) return "NOTHING RAN: all " + std::to_string(counts.total) + " variants were skipped";
  if (bad == 0) return "PASSED: " + std::string(ran == 1 ? "the variant" : "all " + std::to_string(ran) + " variants") +
                       " passed" + skipped;
  std::string which;
  for (const auto& kind : outcome_kinds()) {
    const int n = counts.of(kind.outcome);
    if (n && !outcome_passed(kind.name)) which += (which.empty() ? "" : ", ") + std::to_string(n) + " " + kind.name;
  }
  return "FAILED: " + std::to_string(bad) + " of " + std::to_string(ran) + " variants did not pass (" + which + ")" + skipped;
}

std::string matrix_cell(const Verdict& verdict, const std::string& property) {
  if (verdict.outcome != Outcome::Pass && verdict.outcome != Outcome::Fail) return to_string(verdict.outcome);
  const auto* p = verdict.property(property);
  return p ? to_string(p->outcome) : "";
}

ReportModel report_model(const std::vector<Verdict>& verdicts, const std::string& started, double seconds,
                         const ReportLayout& layout) {
  check_layout(layout, verdicts.size());
  ReportModel model;
  model.started = started;
  model.distmetrics_version = DISTMETRICS_VERSION;
  model.torch_version = DISTMETRICS_TORCH_VERSION;
  for (const auto& v : verdicts) model.counts.add(v.outcome);
  model.counts.seconds = seconds;
  model.by_metric = layout.by_metric;

  // Rows in the order they first appear; their variants.
  model.row_kind = layout.by_metric ? "metric" : "scenario";
  std::vector<std::string> seen;
  std::map<std::string, std::vector<std::size_t>> row_variants;
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    ReportVariant rv = report_variant(verdicts[i], i, layout, seen);
    if (!row_variants.count(rv.row)) model.rows.push_back(ReportRow{rv.row, {}, 0, 0, 0, 0, ""});
    row_variants[rv.row].push_back(i);
    model.variants.push_back(std::move(rv));
  }
  model.columns = layout.columns.empty() ? in_column_order(seen) : layout.columns;
  if (model.columns.empty() && !model.variants.empty()) model.columns.push_back(properties_by_column().front()->name);
  for (auto& row : model.rows) {
    variant_cells(model, row_variants[row.name], verdicts, layout);
    count_row(model, row_variants[row.name], row);
  }
  worst_and_skips(model);
  return model;
}

}  // namespace distmetrics::harness
