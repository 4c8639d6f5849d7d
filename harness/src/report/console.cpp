// The console view: a compact matrix (one symbol a cell), the folded skips, what did not pass
// with its reproduce command once, and the greppable last line.
#include <algorithm>
#include <sstream>

#include "distmetrics/harness/property.h"
#include "distmetrics/harness/report_model.h"
#include "distmetrics/harness/number_text.h"
#include "distmetrics/runtime/text.h"
#include "text.h"

namespace distmetrics::harness {
namespace {

const char* symbol(const std::string& outcome) {
  if (outcome.empty()) return "-";
  const auto* kind = find_outcome(outcome);
  return kind ? kind->symbol : "?";
}

std::string fit(const std::string& name, std::size_t width) {
  if (name.size() <= width) return name + std::string(width - name.size(), ' ');
  return "..." + name.substr(name.size() - (width - 3));  // the end of a path says the most
}

std::string row_tally(const ReportRow& row) {
  std::string out;
  if (row.ran == 0) return std::to_string(row.skipped) + " skipped";
  if (row.bad) out = std::to_string(row.bad) + "/" + std::to_string(row.ran) + " " + row.worst;
  else out = std::to_string(row.ran) + "/" + std::to_string(row.ran) + " passed";
  if (row.skipped) out += ", " + std::to_string(row.skipped) + " skipped";
  return out;
}

void print_matrix(const ReportModel& model, std::ostream& out) {
  constexpr std::size_t kMaxName = 56;
  std::size_t name_width = model.row_kind.size();
  for (const auto& row : model.rows) name_width = std::max(name_width, row.name.size());
  name_width = std::min(name_width, kMaxName);
  std::vector<std::size_t> widths;
  std::string header = fit(model.row_kind, name_width);
  for (const auto& c : model.columns) {
    widths.push_back(std::max<std::size_t>(property_label(c).size(), 1));
    header += "  " + property_label(c);
  }
  out << "\n" << header << "\n";
  for (const auto& row : model.rows) {
    std::string line = fit(row.name, name_width);
    for (std::size_t c = 0; c < row.cells.size(); ++c) {
      const std::size_t left = (widths[c] - 1) / 2;
      line += "  " + std::string(left, ' ') + symbol(row.cells[c].worst) + std::string(widths[c] - 1 - left, ' ');
    }
    out << line << "  " << row_tally(row) << "\n";
  }
  out << "(";
  for (const auto& kind : outcome_kinds()) out << kind.symbol << " " << kind.counted << "  ";
  out << "- not checked";
  std::string abbreviations;
  for (const auto& c : model.columns)
    if (property_label(c) != c) abbreviations += (abbreviations.empty() ? "" : ", ") + property_label(c) + " = " + c;
  out << (abbreviations.empty() ? "" : "; " + abbreviations) << ")\n";
}

}  // namespace

void render_console(const ReportModel& model, std::ostream& out, const ConsoleOptions& options) {
  if (!options.quiet && !model.variants.empty()) {
    print_matrix(model, out);
    if (!model.skips.empty() && !options.hide_skips) {
      out << model.counts.of(Outcome::Skip) << " skipped: ";
      for (std::size_t i = 0; i < model.skips.size(); ++i) {
        out << (i ? "; " : "") << model.skips[i].reason;
        if (model.skips.size() > 1) out << " (" << model.skips[i].count << ")";
      }
      out << (options.verbose ? "" : "  (--verbose lists them)") << "\n";
    }
  }
  for (const auto* v : model.not_passed()) {
    out << "\n" << text::upper(v->outcome) << "  " << v->id << "  (" << fixed_text(v->seconds, 2) << " s)";
    if (model.row_kind == "metric") out << "  [" << v->row << "]";
    out << "\n" << text::indent(v->details, "    ") << "    reproduce: " << v->reproduce << "\n";
  }
  out << "\n";
  if (model.counts.total == 0)
    out << model.last_line_prefix << ": no variant matched the selection: nothing ran"
        << (model.last_line_prefix == "distmetrics" ? " (exit code 2)" : "") << "\n";
  else if (model.counts.of(Outcome::Skip) == model.counts.total)
    out << model.last_line_prefix << ": every variant was skipped: nothing ran\n";
  out << model.last_line_prefix << ": " << model.counts.line() << "\n";
  out.flush();
}

}  // namespace distmetrics::harness
