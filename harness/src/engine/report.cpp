#include "distmetrics/harness/report.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include "distmetrics/build_config.h"

namespace distmetrics::harness {
namespace {

std::string seconds_text(double s, int precision = 2) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(precision) << s;
  return out.str();
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (c < 0x20 && ch != '\n' && ch != '\t' && ch != '\r') out += ' ';  // not allowed in XML 1.0
        else out += ch;
    }
  }
  return out;
}

// How many verdicts JUnit shows as this element ("failure", "error", "skipped").
int junit_count(const OutcomeCounts& counts, const std::string& element) {
  int n = 0;
  for (const auto& kind : outcome_kinds())
    if (element == kind.junit) n += counts.of(kind.outcome);
  return n;
}

// The text that explains a verdict that did not pass: failed properties, diagnosis, reason.
std::string details(const Verdict& v) {
  std::ostringstream out;
  if (v.outcome == Outcome::Fail) {
    for (const auto& p : v.properties)
      if (p.outcome == Outcome::Fail) out << p.message << "\n";
  } else if (!v.diagnosis.empty()) {
    out << v.diagnosis << "\n";
  } else {
    out << v.reason << "\n";
  }
  return out.str();
}

}  // namespace

std::string Summary::line() const {
  std::ostringstream out;
  out << OutcomeCounts::line() << " in " << seconds_text(seconds, 1) << " s";
  return out.str();
}

Summary summarize(const std::vector<Verdict>& verdicts, double seconds) {
  Summary s;
  for (const auto& v : verdicts) s.add(v.outcome);
  s.seconds = seconds;
  return s;
}

ConsoleReport::ConsoleReport(std::ostream& out, int total, ConsoleOptions options)
    : out_(out), total_(total), options_(options) {}

namespace {
constexpr int kSymbolsPerLine = 50;
}  // namespace

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
       << upper(to_string(v.outcome)) << std::right << " " << v.variant.id << "  ";
  if (v.outcome == Outcome::Skip) out_ << "(" << v.reason << ")\n";
  else out_ << "(" << seconds_text(v.seconds) << " s)" << (v.outcome == Outcome::Pass ? "" : ": " + v.reason) << "\n";
  out_.flush();
}

void ConsoleReport::finish(const ReportModel& model) {
  end_progress_line();
  render_console(model, out_, options_);
}

void ConsoleReport::finish(const std::vector<Verdict>& verdicts, double seconds) {
  finish(report_model(json_report(verdicts, now_iso8601(), seconds)));
}

nlohmann::json json_report(const std::vector<Verdict>& verdicts, const std::string& started, double seconds) {
  const auto s = summarize(verdicts, seconds);
  nlohmann::json summary = nlohmann::json::object();
  for (const auto& kind : outcome_kinds()) summary[kind.name] = s.of(kind.outcome);
  summary["total"] = s.total;
  nlohmann::json variants = nlohmann::json::array();
  for (const auto& v : verdicts) variants.push_back(v.to_json());
  return {{"distmetrics_version", DISTMETRICS_VERSION},
          {"torch_version", DISTMETRICS_TORCH_VERSION},
          {"started", started},
          {"seconds", seconds},
          {"summary", summary},
          {"variants", variants}};
}

std::string junit_report(const std::vector<Verdict>& verdicts, double seconds) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Verdict*>> suites;
  for (const auto& v : verdicts) {
    if (!suites.count(v.variant.scenario)) order.push_back(v.variant.scenario);
    suites[v.variant.scenario].push_back(&v);
  }
  const auto total = summarize(verdicts, seconds);
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"distmetrics\" tests=\"" << total.total << "\" failures=\"" << junit_count(total, "failure")
      << "\" errors=\"" << junit_count(total, "error") << "\" skipped=\"" << junit_count(total, "skipped") << "\" time=\""
      << seconds_text(seconds, 3) << "\">\n";
  for (const auto& name : order) {
    const auto& cases = suites[name];
    Summary s;
    for (const auto* v : cases) {
      s.add(v->outcome);
      s.seconds += v->seconds;
    }
    out << "  <testsuite name=\"" << xml_escape(name) << "\" tests=\"" << s.total << "\" failures=\""
        << junit_count(s, "failure") << "\" errors=\"" << junit_count(s, "error") << "\" skipped=\"" << junit_count(s, "skipped")
        << "\" time=\"" << seconds_text(s.seconds, 3) << "\">\n";
    for (const auto* v : cases) {
      out << "    <testcase classname=\"" << xml_escape(name) << "\" name=\"" << xml_escape(v->variant.short_id())
          << "\" time=\"" << seconds_text(v->seconds, 3) << "\"";
      const std::string body = details(*v) + "reproduce: " + v->variant.reproduce();
      const std::string element = kind_of(v->outcome).junit;
      if (element.empty()) {
        out << "/>\n";
        continue;
      }
      if (element == "skipped")
        out << ">\n      <skipped message=\"" << xml_escape(v->reason) << "\"/>\n";
      else
        out << ">\n      <" << element << " message=\"" << xml_escape(v->reason) << "\" type=\"" << to_string(v->outcome)
            << "\">" << xml_escape(body) << "</" << element << ">\n";
      out << "    </testcase>\n";
    }
    out << "  </testsuite>\n";
  }
  out << "</testsuites>\n";
  return out.str();
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

bool write_reports(const ReportFiles& files, const nlohmann::json& report, const ReportModel& model,
                   const std::vector<Verdict>& verdicts, double seconds, std::ostream& err) {
  bool written = true;
  if (!files.json.empty()) written = write_report_file(files.json, report.dump(2) + "\n", err) && written;
  if (!files.junit.empty()) written = write_report_file(files.junit, junit_report(verdicts, seconds), err) && written;
  if (!files.html.empty()) written = write_report_file(files.html, render_html(model), err) && written;
  if (!files.markdown.empty()) written = write_report_file(files.markdown, render_markdown(model), err) && written;
  return written;
}

}  // namespace distmetrics::harness
