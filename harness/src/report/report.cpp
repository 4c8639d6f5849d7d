#include "distmetrics/harness/report.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "distmetrics/harness/number_text.h"
#include "text.h"

namespace distmetrics::harness {
namespace {

constexpr int kSymbolsPerLine = 50;

}  // namespace

ConsoleReport::ConsoleReport(std::ostream& out, int total, ConsoleOptions options)
    : out_(out), total_(total), options_(options) {}

void ConsoleReport::end_progress_line() {
  if (column_ == 0) return;
  const int width = static_cast<int>(std::to_string(std::max(total_, 1)).size());
  out_ << std::string(static_cast<std::size_t>(kSymbolsPerLine - column_), ' ') << "  [" << std::setw(width) << done_
       << "/" << total_ << "]\n";
  column_ = 0;
}

void ConsoleReport::progress(const Verdict& v) {
  ++done_;
  if (options_.quiet) return;
  if (!options_.verbose) {
    out_ << kind_of(v.outcome).symbol;
    if (++column_ == kSymbolsPerLine) end_progress_line();
    out_.flush();
    return;
  }
  const int width = static_cast<int>(std::to_string(std::max(total_, 1)).size());
  out_ << "[" << std::setw(width) << done_ << "/" << total_ << "] " << std::left << std::setw(5)
       << text::upper(to_string(v.outcome)) << std::right << " " << v.variant.id << "  ";
  if (v.outcome == Outcome::Skip) out_ << "(" << v.reason << ")\n";
  else out_ << "(" << fixed_text(v.seconds, 2) << " s)" << (v.outcome == Outcome::Pass ? "" : ": " + v.reason) << "\n";
  out_.flush();
}

void ConsoleReport::finish(const ReportModel& model) {
  end_progress_line();
  render_console(model, out_, options_);
}

void ConsoleReport::finish(const std::vector<Verdict>& verdicts, double seconds) {
  finish(report_model(verdicts, now_iso8601(), seconds));
}

int exit_code(const std::vector<Verdict>& verdicts, bool bad_input) {
  if (bad_input) return kBadInputExitCode;
  const OutcomeKind* worst = nullptr;
  for (const auto& v : verdicts) {
    const OutcomeKind& kind = kind_of(v.outcome);
    if (!worst || kind.severity > worst->severity) worst = &kind;
  }
  return worst ? worst->exit_code : 0;
}

std::string now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

bool write_report_file(const std::string& path, const std::string& text, std::ostream& err) {
  std::error_code ec;
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  std::ofstream file(path, std::ios::binary);
  file << text;
  if (!file) {
    err << "distmetrics: cannot write " << path << "\n";
    return false;
  }
  return true;
}

bool write_reports(const ReportFiles& files, const ReportModel& model, std::ostream& err) {
  bool written = true;
  if (!files.json.empty()) written = write_report_file(files.json, render_json(model).dump(2) + "\n", err) && written;
  if (!files.junit.empty()) written = write_report_file(files.junit, render_junit(model), err) && written;
  if (!files.html.empty()) written = write_report_file(files.html, render_html(model), err) && written;
  if (!files.markdown.empty()) written = write_report_file(files.markdown, render_markdown(model), err) && written;
  return written;
}

}  // namespace distmetrics::harness
