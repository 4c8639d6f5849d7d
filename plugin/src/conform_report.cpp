#include "conform_report.h"

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <map>
#include <sstream>

#include "distmetrics/build_config.h"
#include "distmetrics/harness/report.h"

namespace distmetrics::plugin::detail {
namespace {

using harness::Outcome;
using harness::Verdict;

// Column order, and the short console headers.
const std::vector<std::pair<std::string, std::string>>& known_columns() {
  static const std::vector<std::pair<std::string, std::string>> columns = {
      {"no_hang", "no_hang"},       {"equal_to_single", "equal"}, {"ranks_agree", "agree"},
      {"idempotent", "idem"},       {"update_after_compute", "update"}, {"reset_replay", "reset"},
      {"batch_invariant", "batch"}, {"golden", "golden"},       {"expected_error", "expect"},
      {"agrees_with_reference", "ref"}};
  return columns;
}

std::string short_name(const std::string& property) {
  for (const auto& [name, label] : known_columns())
    if (name == property) return label;
  return property;
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string seconds_text(double s, int precision) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(precision) << s;
  return out.str();
}

std::string indent(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::ostringstream out;
  for (std::string line; std::getline(in, line);) out << prefix << line << "\n";
  return out.str();
}

// Console cells: what needs attention in capitals.
std::string console_cell(const std::string& cell) {
  if (cell.empty()) return "-";
  if (cell == "pass" || cell == "skip") return cell;
  return upper(cell);
}

// Metrics in the order they first appear, each with its verdicts.
std::vector<std::pair<std::string, std::vector<const Verdict*>>> by_metric(const ConformResult& result) {
  std::vector<std::pair<std::string, std::vector<const Verdict*>>> groups;
  for (std::size_t i = 0; i < result.verdicts.size(); ++i) {
    const std::string& metric = result.metrics.at(i);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == metric; });
    if (it == groups.end()) it = groups.insert(groups.end(), {metric, {}});
    it->second.push_back(&result.verdicts[i]);
  }
  return groups;
}

std::vector<std::string> columns_for(const ConformResult& result, const std::vector<const Verdict*>& verdicts) {
  std::vector<std::string> seen;
  auto see = [&seen](const std::string& name) {
    if (std::find(seen.begin(), seen.end(), name) == seen.end()) seen.push_back(name);
  };
  for (const auto* v : verdicts) {
    for (const auto& p : v->properties) see(p.name);
    const auto it = result.checked.find(v->variant.scenario);
    if (it != result.checked.end())
      for (const auto& name : it->second) see(name);
  }
  std::vector<std::string> columns;
  for (const auto& [name, label] : known_columns())
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) columns.push_back(name);
  for (const auto& name : seen)
    if (std::find(columns.begin(), columns.end(), name) == columns.end()) columns.push_back(name);
  if (columns.empty()) columns.push_back("no_hang");
  return columns;
}

bool passed(const Verdict& v) { return v.outcome == Outcome::Pass || v.outcome == Outcome::Skip; }

// A property's message without its "variant:" and "reproduce:" lines (said once per variant).
std::string without_variant_lines(const std::string& message) {
  std::istringstream in(message);
  std::ostringstream out;
  for (std::string line; std::getline(in, line);) {
    const auto text = line.find_first_not_of(' ');
    if (text != std::string::npos &&
        (line.compare(text, 9, "variant: ") == 0 || line.compare(text, 11, "reproduce: ") == 0))
      continue;
    out << line << "\n";
  }
  return out.str();
}

// What differed (or what happened), with the command that reproduces it.
std::string failure_text(const Verdict& v) {
  std::ostringstream out;
  if (v.outcome == Outcome::Fail) {
    for (const auto& p : v.properties)
      if (p.outcome == Outcome::Fail) out << without_variant_lines(p.message);
  } else {
    out << v.reason << "\n";
    // The diagnosis often opens with the reason's own sentence: say it once.
    std::string diagnosis = v.diagnosis;
    const std::string opening = diagnosis.substr(0, diagnosis.find('\n'));
    if (!opening.empty() && v.reason.find(opening) != std::string::npos)
      diagnosis = diagnosis.find('\n') == std::string::npos ? "" : diagnosis.substr(diagnosis.find('\n') + 1);
    if (!diagnosis.empty()) out << diagnosis << "\n";
  }
  std::string text = without_variant_lines(out.str());
  return text + "reproduce: " + v.variant.reproduce() + "\n";
}

std::string summary_counts(const std::vector<const Verdict*>& verdicts) {
  harness::Summary s;
  for (const auto* v : verdicts) s.add(v->outcome);
  std::ostringstream out;
  out << s.total << " variant(s): " << s.pass << " passed";
  if (s.fail) out << ", " << s.fail << " failed";
  if (s.hang) out << ", " << s.hang << " hang";
  if (s.crash) out << ", " << s.crash << " crash";
  if (s.error) out << ", " << s.error << " error";
  if (s.skip) out << ", " << s.skip << " skipped";
  return out.str();
}

}  // namespace

std::vector<std::string> matrix_properties(const ConformResult& result) {
  std::vector<const Verdict*> all;
  for (const auto& v : result.verdicts) all.push_back(&v);
  return columns_for(result, all);
}

std::string matrix_cell(const Verdict& verdict, const std::string& property) {
  if (verdict.outcome != Outcome::Pass && verdict.outcome != Outcome::Fail) return harness::to_string(verdict.outcome);
  const auto* p = verdict.property(property);
  return p ? harness::to_string(p->outcome) : "";
}

void print_progress(std::ostream& out, const Verdict& v, int done, int total) {
  const int width = static_cast<int>(std::to_string(std::max(total, 1)).size());
  out << "[" << std::setw(width) << done << "/" << total << "] " << std::left << std::setw(5)
      << upper(harness::to_string(v.outcome)) << std::right << " " << v.variant.id << "  ";
  if (v.outcome == Outcome::Skip) out << "(" << v.reason << ")\n";
  else out << "(" << seconds_text(v.seconds, 2) << " s)" << (passed(v) ? "" : ": " + v.reason) << "\n";
  out.flush();
}

void print_console_report(std::ostream& out, const ConformResult& result, bool quiet) {
  const auto groups = by_metric(result);
  if (!quiet) {
    std::vector<std::string> used;
    for (const auto& [metric, verdicts] : groups) {
      const auto columns = columns_for(result, verdicts);
      std::size_t id_width = 7;
      for (const auto* v : verdicts) id_width = std::max(id_width, v->variant.id.size());
      out << "\n" << metric << " (" << result.plugin->name << "): " << summary_counts(verdicts) << "\n";
      // Fixed-width columns, no trailing blanks.
      auto row = [&](const std::string& label, const std::vector<std::string>& cells) {
        std::string line = "  " + label + std::string(id_width - label.size(), ' ');
        for (std::size_t i = 0; i < cells.size(); ++i) {
          const std::size_t width = std::max<std::size_t>(short_name(columns[i]).size(), 5);
          line += "  " + cells[i] + (i + 1 < cells.size() ? std::string(width - std::min(width, cells[i].size()), ' ') : "");
        }
        out << line << "\n";
      };
      std::vector<std::string> header;
      for (const auto& c : columns) header.push_back(short_name(c));
      row("variant", header);
      for (const auto* v : verdicts) {
        std::vector<std::string> cells;
        for (const auto& c : columns) cells.push_back(console_cell(matrix_cell(*v, c)));
        row(v->variant.id, cells);
      }
      for (const auto& c : columns)
        if (short_name(c) != c && std::find(used.begin(), used.end(), c) == used.end()) used.push_back(c);
    }
    if (!used.empty()) {
      out << "  (";
      for (std::size_t i = 0; i < used.size(); ++i) out << (i ? ", " : "") << short_name(used[i]) << " = " << used[i];
      out << ")\n";
    }
  }
  std::vector<std::size_t> bad;
  for (std::size_t i = 0; i < result.verdicts.size(); ++i)
    if (!passed(result.verdicts[i])) bad.push_back(i);
  if (!bad.empty()) {
    out << "\nnot passed: what differed, and the command that reproduces it\n";
    for (std::size_t i : bad) {
      const auto& v = result.verdicts[i];
      out << "\n" << upper(harness::to_string(v.outcome)) << "  " << v.variant.id << "  [" << result.metrics[i] << "]\n"
          << indent(failure_text(v), "    ");
    }
  }
  const auto summary = harness::summarize(result.verdicts, result.seconds);
  out << "\n";
  if (summary.total == 0) out << "distmetrics conform: no variant matched the selection: nothing ran\n";
  else if (summary.skip == summary.total) out << "distmetrics conform: every variant was skipped: nothing ran\n";
  out << "distmetrics conform: " << result.plugin->name << ": " << summary.line() << "\n";
  out.flush();
}

std::string markdown_report(const ConformResult& result) {
  const auto& plugin = *result.plugin;
  const auto summary = harness::summarize(result.verdicts, result.seconds);
  std::ostringstream md;
  md << "# distmetrics conform: " << plugin.name << (plugin.version.empty() ? "" : " " + plugin.version) << "\n\n"
     << "- plugin: `" << plugin.path << "` (" << plugin.describe() << ")\n"
     << "- checked by distmetrics " << DISTMETRICS_VERSION << " on LibTorch " << DISTMETRICS_TORCH_VERSION
     << ", started " << result.started << ", " << seconds_text(result.seconds, 1) << " s\n"
     << "- result: " << summary.line() << "\n";
  for (const auto& [metric, verdicts] : by_metric(result)) {
    const auto columns = columns_for(result, verdicts);
    md << "\n## " << metric << "\n\n" << summary_counts(verdicts) << "\n\n| scenario | backend | world size | shard | placement |";
    for (const auto& c : columns) md << " " << c << " |";
    md << "\n|---|---|---|---|---|";
    for (std::size_t i = 0; i < columns.size(); ++i) md << "---|";
    md << "\n";
    for (const auto* v : verdicts) {
      md << "| `" << v->variant.scenario << "` | " << v->variant.backend << " | " << v->variant.world_size << " | "
         << v->variant.shard << " | " << v->variant.placement << " |";
      for (const auto& c : columns) {
        const std::string cell = matrix_cell(*v, c);
        md << " " << (cell.empty() ? "-" : cell == "pass" || cell == "skip" ? cell : "**" + cell + "**") << " |";
      }
      md << "\n";
    }
  }
  bool header = false;
  for (std::size_t i = 0; i < result.verdicts.size(); ++i) {
    const auto& v = result.verdicts[i];
    if (passed(v)) continue;
    if (!header) md << "\n## Not passed\n";
    header = true;
    md << "\n### " << upper(harness::to_string(v.outcome)) << " `" << v.variant.id << "` (" << result.metrics[i] << ")\n\n"
       << "```text\n" << failure_text(v) << "```\n\nReproduce: `" << v.variant.reproduce() << "`\n";
  }
  return md.str();
}

nlohmann::json json_report(const ConformResult& result) {
  const auto& plugin = *result.plugin;
  nlohmann::json report = harness::json_report(result.verdicts, result.started, result.seconds);
  report["plugin"] = {{"path", plugin.path},
                      {"name", plugin.name},
                      {"version", plugin.version},
                      {"interface", plugin.build.interface_version},
                      {"torch_version", plugin.build.torch_version},
                      {"distmetrics_version", plugin.build.distmetrics_version},
                      {"compiler", plugin.build.compiler},
                      {"metrics", plugin.metric_names()}};
  const auto columns = matrix_properties(result);
  report["properties"] = columns;
  nlohmann::json matrix = nlohmann::json::array();
  for (std::size_t i = 0; i < result.verdicts.size(); ++i) {
    const auto& v = result.verdicts[i];
    report["variants"][i]["metric"] = result.metrics[i];
    nlohmann::json cells = nlohmann::json::object();
    for (const auto& c : columns) {
      const std::string cell = matrix_cell(v, c);
      cells[c] = cell.empty() ? nlohmann::json(nullptr) : nlohmann::json(cell);
    }
    matrix.push_back({{"metric", result.metrics[i]},
                      {"variant", v.variant.id},
                      {"scenario", v.variant.scenario},
                      {"backend", v.variant.backend},
                      {"world_size", v.variant.world_size},
                      {"shard", v.variant.shard},
                      {"placement", v.variant.placement},
                      {"outcome", harness::to_string(v.outcome)},
                      {"properties", cells}});
  }
  report["matrix"] = matrix;
  return report;
}

}  // namespace distmetrics::plugin::detail
