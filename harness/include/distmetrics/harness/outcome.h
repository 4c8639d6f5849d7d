// The outcomes of a variant: one table. The JSON report's names and summary counts, the console's
// symbols and last line, JUnit's elements, the Markdown and HTML views, the exit code and the
// order of severity are all read from it; docs/report.schema.json and docs/cli-contract.md are
// checked against it (engine_tables_test.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace distmetrics::harness {

enum class Outcome { Pass, Fail, Hang, Crash, MemoryExceeded, Error, Skip };

struct OutcomeKind {
  Outcome outcome;
  const char* name;     // in the JSON report, JUnit's type and the pytest plugin: "memory_exceeded"
  const char* symbol;   // progress and console matrix: "M"
  const char* counted;  // the last line: "1 memory_exceeded"; "passed", "failed", "skipped" read better
  const char* mark;     // the Markdown view
  const char* colour;   // the HTML view's background (white text on it, except pass and skip)
  int severity;         // a matrix cell shows its worst variant: skip < pass < fail < error < hang < ...
  int exit_code;        // the run's exit code when this is its most severe outcome (0: none)
  const char* junit;    // the JUnit element: "" (a pass), "skipped", "failure" or "error"
  const char* meaning;  // one line, for the docs and the console legend
  // In the last line even at 0: the outcomes that line has always counted (tools grep it);
  // newer ones appear there only when they occur.
  bool counted_when_zero;
};

// Every outcome, in report order (pass first, skip last).
const std::vector<OutcomeKind>& outcome_kinds();
const OutcomeKind& kind_of(Outcome outcome);
// nullptr for a name the table does not have.
const OutcomeKind* find_outcome(std::string_view name);

const char* to_string(Outcome outcome);  // "pass", "fail", ...
// Of an outcome name: its severity (0 for an unknown name, like a pass).
int outcome_severity(std::string_view name);
// Pass and skip passed; every other outcome did not.
bool outcome_passed(std::string_view name);

// Counts of each outcome, in table order.
struct OutcomeCounts {
  std::vector<int> counts = std::vector<int>(outcome_kinds().size(), 0);
  int total = 0;
  void add(Outcome outcome, int n = 1);
  int of(Outcome outcome) const;
  int not_passed() const;  // every outcome but pass and skip
  // "118 passed, 1 failed, 0 hang, 0 crash, 0 error, 1 skipped" (", 1 memory_exceeded" after the
  // crashes when there was one)
  std::string line() const;
};

}  // namespace distmetrics::harness
