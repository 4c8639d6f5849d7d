// Reading a JSON report into the report model (report_model.h).
#include <algorithm>
#include <cctype>
#include <iomanip>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "distmetrics/harness/compare.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/harness/report_model.h"
#include "text.h"

namespace distmetrics::harness {
namespace {

using nlohmann::json;

const json& field(const json& j, const char* name, const std::string& where) {
  if (!j.is_object() || !j.contains(name))
    throw std::invalid_argument("not a distmetrics JSON report: " + where + " has no field '" + name + "'");
  return j.at(name);
}

std::string str(const json& j, const char* name) {
  if (!j.is_object() || !j.contains(name) || !j.at(name).is_string()) return "";
  return j.at(name).get<std::string>();
}

std::optional<std::int64_t> opt_int(const json& j, const char* name) {
  if (!j.is_object() || !j.contains(name) || !j.at(name).is_number()) return std::nullopt;
  return j.at(name).get<std::int64_t>();
}

std::string anchor_of(const std::string& prefix, const std::string& text) {
  std::string out = prefix;
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  return out;
}

std::string shape_text(const json& shape) {
  if (!shape.is_array()) return "";
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + shape[i].dump();
  return out + "]";
}

// What differed, or what happened: the failed properties' messages, or the reason and the
// diagnosis (said once when the diagnosis opens with the reason's sentence).
std::string details_of(const json& v, const std::string& outcome) {
  std::ostringstream out;
  if (outcome == "fail") {
    for (const auto& p : v.value("properties", json::array()))
      if (str(p, "outcome") == "fail") out << text::without_variant_lines(str(p, "message"));
  } else {
    const std::string reason = str(v, "reason");
    out << reason << "\n";
    std::string diagnosis = str(v, "diagnosis");
    const std::string opening = text::first_line(diagnosis);
    if (!opening.empty() && reason.find(opening) != std::string::npos)
      diagnosis = diagnosis.find('\n') == std::string::npos ? "" : diagnosis.substr(diagnosis.find('\n') + 1);
    if (!diagnosis.empty()) out << diagnosis << "\n";
  }
  return text::without_variant_lines(out.str());
}

Finding finding_of(const json& p, const json& ranks_json) {
  Finding f;
  f.property = str(p, "name");
  const std::string message = str(p, "message");
  f.headline = text::first_line(message);
  f.message = text::without_variant_lines(message);
  f.single = p.contains("single") && !p.at("single").is_null() ? value_text(p.at("single")) : "none";
  if (p.contains("difference") && p.at("difference").is_number()) f.difference = p.at("difference").get<double>();
  // The message's own lines say, per rank, the difference to what it was compared with.
  std::map<int, std::string> lines;
  static const std::regex rank_line(R"(^  rank (\d+): (.*)$)");
  std::istringstream in(message);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, rank_line)) lines[std::stoi(m[1])] = m[2];
    else if (line.rfind("  tolerance: ", 0) == 0) f.tolerance = line.substr(13);
  }
  const json values = p.value("ranks", json::array());
  for (std::size_t r = 0; r < values.size() || lines.count(static_cast<int>(r)); ++r) {
    RankValue rv;
    rv.rank = static_cast<int>(r);
    const std::string line = lines.count(rv.rank) ? lines[rv.rank] : "";
    rv.value = r < values.size() && !values[r].is_null() ? value_text(values[r]) : line;
    static const std::regex difference(R"(   difference (\S+))");
    std::smatch m;
    if (std::regex_search(line, m, difference)) {
      try {
        rv.difference = std::stod(m[1]);
      } catch (const std::exception&) {
      }
    }
    rv.differs = line.find("<- differs") != std::string::npos || (r >= values.size() || values[r].is_null());
    if (ranks_json.is_array() && r < ranks_json.size()) {
      rv.samples = opt_int(ranks_json[r], "samples");
      rv.batches = opt_int(ranks_json[r], "batches");
    }
    f.ranks.push_back(std::move(rv));
  }
  return f;
}

// The collectives of every rank side by side; the first sequence number at which they differ
// (a rank issued another collective, or none) is the divergence. With a deviation (a desync judged
// per script step), the blamed ranks' cells of the step where they broke the pattern are marked.
std::optional<Timeline> timeline_of(const json& ranks, const json& deviation) {
  if (!ranks.is_array() || ranks.empty()) return std::nullopt;
  Timeline t;
  std::uint64_t longest = 0;
  std::vector<std::map<std::uint64_t, TimelineCell>> by_rank;
  bool any = false;
  for (const auto& r : ranks) {
    t.ranks.push_back(r.value("rank", 0));
    t.states.push_back(str(r, "state"));
    t.errors.push_back(str(r, "error"));
    std::map<std::uint64_t, TimelineCell> cells;
    const auto blocked = opt_int(r, "blocked_in");
    for (const auto& c : r.value("trace", json::array())) {
      TimelineCell cell;
      cell.present = true;
      cell.op = str(c, "op");
      cell.dtype = str(c, "dtype");
      cell.shape = shape_text(c.value("shape", json::array()));
      cell.script_step = static_cast<int>(opt_int(c, "script_step").value_or(0));
      cell.step_text = str(c, "step");
      const auto seq = c.value("seq", std::uint64_t{0});
      cell.blocked = blocked && static_cast<std::uint64_t>(*blocked) == seq;
      cells[seq] = cell;
      longest = std::max(longest, seq + 1);
      any = true;
    }
    by_rank.push_back(std::move(cells));
  }
  if (!any) return std::nullopt;
  if (deviation.is_object()) {
    TimelineDeviation d;
    d.script_step = deviation.value("script_step", 0);
    d.compute = opt_int(deviation, "compute");
    d.seq = deviation.value("seq", std::uint64_t{0});
    d.op = str(deviation, "op");
    d.more = deviation.value("more", std::vector<int>{});
    d.fewer = deviation.value("fewer", std::vector<int>{});
    d.blamed = deviation.value("blamed", std::vector<int>{});
    auto has = [](const std::vector<int>& ranks, int r) { return std::find(ranks.begin(), ranks.end(), r) != ranks.end(); };
    for (std::size_t i = 0; i < t.ranks.size(); ++i) {
      const int rank = t.ranks[i];
      // The blamed side's cells are marked; on an even split, both sides' (as parted).
      const bool blamed = has(d.blamed, rank), even = d.blamed.empty();
      if (!blamed && !even) continue;
      if (has(d.more, rank)) {
        // What it issued in that step from the parting collective on.
        for (auto& [seq, cell] : by_rank[i])
          if (seq >= d.seq && cell.script_step == d.script_step) (blamed ? cell.deviates : cell.parted) = true;
      } else if (has(d.fewer, rank)) {
        // The place of the collective it passed the step without: what it issued there instead, or none.
        auto& cell = by_rank[i][d.seq];
        (blamed ? cell.deviates : cell.parted) = true;
      }
    }
    t.deviation = d;
  }
  for (std::uint64_t seq = 0; seq < longest && !t.divergence; ++seq) {
    std::string first;
    bool have_first = false;
    for (const auto& cells : by_rank) {
      const auto it = cells.find(seq);
      const std::string sig = it == cells.end() || !it->second.present ? "(none)" : it->second.signature();
      if (!have_first) {
        first = sig;
        have_first = true;
      } else if (sig != first) {
        t.divergence = seq;
      }
    }
  }
  // Long traces: a few rows before the divergence and after it (or the last ones), not thousands.
  constexpr std::uint64_t kBefore = 8, kAfter = 3;
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
    for (const auto& cells : by_rank) {
      const auto it = cells.find(seq);
      row.push_back(it == cells.end() ? TimelineCell{} : it->second);
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace

std::string ReportCell::counts() const {
  if (ran == 0) return skipped ? std::to_string(skipped) + " skipped" : "";
  if (bad == 0) return std::to_string(ran) + "/" + std::to_string(ran) + " pass";
  return std::to_string(bad) + "/" + std::to_string(ran) + " " + worst;
}

std::string ReportCounts::line() const {
  std::ostringstream out;
  out << OutcomeCounts::line() << " in " << std::fixed << std::setprecision(1) << seconds << " s";
  return out.str();
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

ReportModel report_model(const json& report) {
  ReportModel model;
  const auto& variants = field(report, "variants", "the report");
  const auto& summary = field(report, "summary", "the report");
  if (!variants.is_array()) throw std::invalid_argument("not a distmetrics JSON report: 'variants' is not an array");
  model.started = str(report, "started");
  model.distmetrics_version = str(report, "distmetrics_version");
  model.torch_version = str(report, "torch_version");
  for (const auto& kind : outcome_kinds()) model.counts.add(kind.outcome, summary.value(kind.name, 0));
  model.counts.total = summary.value("total", 0);
  model.counts.seconds = report.value("seconds", 0.0);
  const json matrix = report.value("matrix", json::array());

  // Rows in the order they first appear; their variants.
  bool by_metric = false;
  for (const auto& v : variants) by_metric = by_metric || v.contains("metric");
  model.row_kind = by_metric ? "metric" : "scenario";
  std::vector<std::string> seen;
  std::map<std::string, std::vector<std::size_t>> row_variants;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const auto& v = variants[i];
    const std::string where = "variants[" + std::to_string(i) + "]";
    ReportVariant rv;
    rv.index = i;
    rv.id = field(v, "id", where).get<std::string>();
    rv.outcome = field(v, "outcome", where).get<std::string>();
    rv.scenario = str(v, "scenario");
    rv.row = by_metric ? str(v, "metric") : rv.scenario;
    rv.file = str(v, "file");
    rv.backend = str(v, "backend");
    rv.world_size = v.value("world_size", 0);
    rv.shard = str(v, "shard");
    rv.placement = str(v, "placement");
    rv.reason = str(v, "reason");
    rv.reproduce = str(v, "reproduce");
    rv.diagnosis = str(v, "diagnosis");
    rv.seconds = v.value("seconds", 0.0);
    rv.anchor = anchor_of("v-", rv.id);
    const json ranks = v.value("ranks", json::array());
    for (const auto& p : v.value("properties", json::array())) {
      const std::string name = str(p, "name");
      if (std::find(seen.begin(), seen.end(), name) == seen.end()) seen.push_back(name);
      if (str(p, "outcome") == "fail") rv.findings.push_back(finding_of(p, ranks));
    }
    for (const auto& r : ranks) {
      RankValue counts;
      counts.rank = r.value("rank", 0);
      counts.samples = opt_int(r, "samples");
      counts.batches = opt_int(r, "batches");
      rv.rank_counts.push_back(counts);
    }
    if (!rv.passed() && rv.outcome != "fail") rv.timeline = timeline_of(ranks, v.value("deviation", json()));  // hang, crash, memory, error
    rv.details = rv.passed() ? "" : details_of(v, rv.outcome);
    if (!row_variants.count(rv.row)) model.rows.push_back(ReportRow{rv.row, {}, 0, 0, 0, 0, ""});
    row_variants[rv.row].push_back(i);
    model.variants.push_back(std::move(rv));
  }
  if (report.contains("properties") && report.at("properties").is_array())
    model.columns = report.at("properties").get<std::vector<std::string>>();
  else
    model.columns = in_column_order(seen);
  if (model.columns.empty() && !model.variants.empty()) model.columns.push_back(properties_by_column().front()->name);

  // Each variant's outcome per column. A variant that hung, crashed, raised or was skipped has
  // that outcome in every column of its row: none of its properties could be judged.
  for (auto& row : model.rows) {
    const auto& members = row_variants[row.name];
    std::vector<bool> row_checks(model.columns.size(), false);
    for (std::size_t c = 0; c < model.columns.size(); ++c)
      for (std::size_t i : members)
        for (const auto& p : variants[i].value("properties", json::array()))
          if (str(p, "name") == model.columns[c]) row_checks[c] = true;
    for (std::size_t i : members) {
      auto& rv = model.variants[i];
      const json cells = i < matrix.size() ? matrix[i].value("properties", json::object()) : json();
      for (std::size_t c = 0; c < model.columns.size(); ++c) {
        const std::string& column = model.columns[c];
        std::string cell;
        if (cells.is_object()) {
          cell = str(cells, column.c_str());
        } else if (rv.outcome == "pass" || rv.outcome == "fail") {
          for (const auto& p : variants[i].value("properties", json::array()))
            if (str(p, "name") == column) cell = str(p, "outcome");
        } else if (row_checks[c] || c == 0) {
          cell = rv.outcome;
        }
        rv.cells.emplace_back(column, cell);
      }
    }
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

  for (const auto& v : model.variants) {
    if (v.outcome != "skip" && (model.worst.empty() || outcome_severity(v.outcome) > outcome_severity(model.worst)))
      model.worst = v.outcome;
    if (v.outcome != "skip") continue;
    const std::string gist = v.reason.substr(0, v.reason.find(" ("));
    auto group = std::find_if(model.skips.begin(), model.skips.end(), [&](const auto& g) { return g.reason == gist; });
    if (group == model.skips.end()) group = model.skips.insert(model.skips.end(), SkipGroup{gist, 0, {}});
    ++group->count;
    auto full = std::find_if(group->reasons.begin(), group->reasons.end(), [&](const auto& r) { return r.first == v.reason; });
    if (full == group->reasons.end()) group->reasons.emplace_back(v.reason, 1);
    else ++full->second;
  }
  std::stable_sort(model.skips.begin(), model.skips.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
  return model;
}

}  // namespace distmetrics::harness
