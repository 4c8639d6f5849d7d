// The Markdown view, fit for a GitHub pull-request comment: the verdict, a summary matrix, the
// skips grouped by reason, and one collapsible <details> per variant that did not pass, with
// the command that reproduces it once.
#include <sstream>

#include "distmetrics/harness/report_model.h"
#include "distmetrics/harness/number_text.h"
#include "distmetrics/runtime/text.h"
#include "text.h"

namespace distmetrics::harness {
namespace {

const char* mark(const std::string& outcome) {
  const auto* kind = find_outcome(outcome);
  return kind ? kind->mark : "";
}

// Inside a table cell: no pipes, no newlines.
std::string cell_text(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return out;
}

// A fenced block that the text itself cannot close.
std::string fenced(const std::string& text, const std::string& language) {
  std::string fence = "```";
  while (text.find(fence) != std::string::npos) fence += "`";
  return fence + language + "\n" + text + (text.empty() || text.back() == '\n' ? "" : "\n") + fence + "\n";
}

}  // namespace

namespace {

// explore's summary: a section per failure with its shrunk scenario.
std::string search_markdown(const SearchSummary& s) {
  std::ostringstream md;
  md << "## distmetrics explore: " << s.metric << "\n\n" << s.cases << " case(s), seed " << s.seed << ", "
     << fixed_text(s.seconds, 1) << " s, " << s.findings.size() << " distinct failure(s)\n\n";
  for (const auto& f : s.findings)
    md << "- **" << f.signature << "** (case " << f.index << "): " << runtime::first_line(f.verdict.reason) << "; shrunk to "
       << f.shrunk_size << "\n\n```toml\n" << f.toml << "```\n";
  return md.str();
}

}  // namespace

std::string render_markdown(const ReportModel& model) {
  if (model.search) return search_markdown(*model.search);
  std::ostringstream md;
  const bool passed = model.worst.empty() || model.worst == "pass";
  md << "## " << model.title << "\n\n";
  md << "**" << (model.counts.total == 0 || model.counts.of(Outcome::Skip) == model.counts.total ? "⏭️" : passed ? "✅" : "❌") << " "
     << model.verdict() << "**\n\n";
  for (const auto& [label, value] : model.header) md << "- " << label << ": " << value << "\n";
  md << "- " << model.last_line_prefix << ": " << model.counts.line() << "\n";
  if (!model.started.empty())
    md << "- distmetrics " << model.distmetrics_version << " on LibTorch " << model.torch_version << ", started "
       << model.started << "\n";

  if (!model.rows.empty()) {
    md << "\n| " << model.row_kind << " |";
    for (const auto& c : model.columns) md << " `" << c << "` |";
    md << "\n|---|";
    for (std::size_t i = 0; i < model.columns.size(); ++i) md << ":-:|";
    md << "\n";
    for (const auto& row : model.rows) {
      md << "| `" << cell_text(row.name) << "` |";
      for (const auto& cell : row.cells)
        md << " " << (cell.checked() ? std::string(mark(cell.worst)) + " " + cell.counts() : std::string("–")) << " |";
      md << "\n";
    }
  }
  if (!model.skips.empty()) {
    md << "\n<details><summary>" << model.counts.of(Outcome::Skip) << " skipped: ";
    for (std::size_t i = 0; i < model.skips.size(); ++i)
      md << (i ? "; " : "") << text::html_escape(model.skips[i].reason)
         << (model.skips.size() > 1 ? " (" + std::to_string(model.skips[i].count) + ")" : "");
    md << "</summary>\n\n";
    for (const auto& s : model.skips)
      for (const auto& [reason, count] : s.reasons) md << "- " << count << " × " << text::html_escape(reason) << "\n";
    md << "\n</details>\n";
  }
  const auto bad = model.not_passed();
  if (!bad.empty()) md << "\n### Not passed\n";
  for (const auto* v : bad) {
    md << "\n<details><summary>" << mark(v->outcome) << " <b>" << text::upper(v->outcome) << "</b> <code>"
       << text::html_escape(v->id) << "</code>" << (model.row_kind == "metric" ? " (" + text::html_escape(v->row) + ")" : "")
       << ": " << text::html_escape(runtime::first_line(v->reason)) << "</summary>\n\n";
    md << fenced(v->details, "text") << "\nReproduce:\n\n" << fenced(v->reproduce, "sh") << "\n</details>\n";
  }
  return md.str();
}

}  // namespace distmetrics::harness
