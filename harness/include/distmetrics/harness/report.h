// Reports of a run: console progress, then the report model's console view (report_model.h)
// ending in a last line that can be grepped; the report files (each a view of the model:
// JSON and JUnit XML of docs/cli-contract.md, HTML, Markdown); the exit code.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "distmetrics/harness/report_model.h"
#include "distmetrics/harness/verdict.h"

namespace distmetrics::harness {

class ConsoleReport {
 public:
  // `total` sizes the counter. By default each finished variant prints one symbol (outcome.h:
  // ". F H C M E s",
  // 50 to a line, each line ending in its count); verbose: a line per variant,
  // "[  3/120] PASS  core/accuracy_multiclass:gloo-ws4-uneven-cpu  (0.41 s)"; quiet: nothing.
  ConsoleReport(std::ostream& out, int total, ConsoleOptions options);
  void progress(const Verdict& verdict);
  // The matrix, the folded skips, what did not pass and the last line (render_console).
  void finish(const ReportModel& model);
  void finish(const std::vector<Verdict>& verdicts, double seconds);  // report_model(verdicts, now, seconds)

 private:
  void end_progress_line();
  std::ostream& out_;
  int total_;
  int done_ = 0;
  int column_ = 0;
  ConsoleOptions options_;
};

// The exit code of bad input (a scenario file, a flag, a plugin that cannot be loaded); not an
// outcome of a variant, so not in the outcome table.
constexpr int kBadInputExitCode = 2;

// Exit codes: kBadInputExitCode for bad input, else the exit code of the most severe outcome
// (the outcome table, outcome.h: 0 nothing failed; 1 a property failed or an error outcome; 3 a
// hang; 4 a crash; 6 a rank past its memory limit). The highest priority wins: 2 > 4 > 6 > 3 > 1.
int exit_code(const std::vector<Verdict>& verdicts, bool bad_input);

// The report files a run writes (--json, --junit, --html, --markdown); empty: not written.
struct ReportFiles {
  std::string json, junit, html, markdown;
};
// Writes each report file asked for, each a view of the run's model (render_json, render_junit,
// render_html, render_markdown). False when one could not be written (said on `err`).
bool write_reports(const ReportFiles& files, const ReportModel& model, std::ostream& err);

// Writes a report file, creating its folder; false, with a message on `err`, when it cannot.
bool write_report_file(const std::string& path, const std::string& text, std::ostream& err);

// Now, as ISO-8601 UTC ("2024-05-01T12:00:00Z").
std::string now_iso8601();

}  // namespace distmetrics::harness
