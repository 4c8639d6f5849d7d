// The JUnit view: a test suite per scenario (in the order they first appear), a test case per
// variant, named by its short id; what did not pass carries its details and reproduce command.
#include <iomanip>
#include <map>
#include <sstream>

#include "distmetrics/harness/number_text.h"
#include "distmetrics/harness/report_model.h"

namespace distmetrics::harness {
namespace {

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

// How many variants JUnit shows as this element ("failure", "error", "skipped").
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
      if (p.outcome == Outcome::Fail) out << p.full_message() << "\n";
  } else if (!v.diagnosis.empty()) {
    out << v.diagnosis << "\n";
  } else {
    out << v.reason << "\n";
  }
  if (v.outcome != Outcome::Fail) out << v.kept_verdicts_text();  // judged before it died
  return out.str();
}

}  // namespace

std::string render_junit(const ReportModel& model) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Verdict*>> suites;
  for (const auto& rv : model.variants) {
    const Verdict& v = rv.verdict;
    if (!suites.count(v.variant.scenario)) order.push_back(v.variant.scenario);
    suites[v.variant.scenario].push_back(&v);
  }
  const OutcomeCounts& total = model.counts;
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"distmetrics\" tests=\"" << total.total << "\" failures=\"" << junit_count(total, "failure")
      << "\" errors=\"" << junit_count(total, "error") << "\" skipped=\"" << junit_count(total, "skipped") << "\" time=\""
      << fixed_text(model.counts.seconds, 3) << "\">\n";
  for (const auto& name : order) {
    const auto& cases = suites[name];
    OutcomeCounts s;
    double seconds = 0;
    for (const auto* v : cases) {
      s.add(v->outcome);
      seconds += v->seconds;
    }
    out << "  <testsuite name=\"" << xml_escape(name) << "\" tests=\"" << s.total << "\" failures=\""
        << junit_count(s, "failure") << "\" errors=\"" << junit_count(s, "error") << "\" skipped=\"" << junit_count(s, "skipped")
        << "\" time=\"" << fixed_text(seconds, 3) << "\">\n";
    for (const auto* v : cases) {
      out << "    <testcase classname=\"" << xml_escape(name) << "\" name=\"" << xml_escape(v->variant.short_id())
          << "\" time=\"" << fixed_text(v->seconds, 3) << "\"";
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

}  // namespace distmetrics::harness
