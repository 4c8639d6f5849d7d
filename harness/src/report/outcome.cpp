#include "distmetrics/harness/outcome.h"

#include <sstream>
#include <stdexcept>

namespace distmetrics::harness {

const std::vector<OutcomeKind>& outcome_kinds() {
  // Exit codes 1, 3 and 4 predate memory_exceeded (6; the CI scripts use 5 for a failed setup):
  // its severity sits between hang and crash, so the code that wins is 2 (bad input) > 4 > 6 > 3 > 1.
  static const std::vector<OutcomeKind> kinds = {
      {Outcome::Pass, "pass", ".", "passed", "✅", "#1f883d", 0, 0, "", "every property held", true},
      {Outcome::Fail, "fail", "F", "failed", "❌", "#cf222e", 1, 1, "failure", "a property failed", true},
      {Outcome::Hang, "hang", "H", "hang", "⏳", "#8250df", 3, 3, "error",
       "the variant did not finish within its deadline (a rank, or the single-process reference)", true},
      {Outcome::Crash, "crash", "C", "crash", "💥", "#82071e", 5, 4, "error", "a rank died (signal or exit status)", true},
      {Outcome::MemoryExceeded, "memory_exceeded", "M", "memory_exceeded", "💾", "#0a3069", 4, 6, "error",
       "a rank went past its memory limit (--rank-memory)", false},
      {Outcome::Error, "error", "E", "error", "⚠️", "#bc4c00", 2, 1, "error",
       "the variant could not be judged (a rank raised outside the metric, bad data)", true},
      {Outcome::Skip, "skip", "s", "skipped", "⏭️", "#818b98", -1, 0, "skipped",
       "not run here (needs GPUs, a backend, more ranks than the launcher has)", true},
  };
  return kinds;
}

const OutcomeKind& kind_of(Outcome outcome) {
  for (const auto& kind : outcome_kinds())
    if (kind.outcome == outcome) return kind;
  throw std::logic_error("an outcome missing from outcome_kinds()");
}

const OutcomeKind* find_outcome(std::string_view name) {
  for (const auto& kind : outcome_kinds())
    if (name == kind.name) return &kind;
  return nullptr;
}

const char* to_string(Outcome outcome) { return kind_of(outcome).name; }

int outcome_severity(std::string_view name) {
  const auto* kind = find_outcome(name);
  return kind ? kind->severity : 0;
}

// Not a failure of the run: the outcomes that set no exit code (pass, skip).
bool outcome_passed(std::string_view name) {
  const auto* kind = find_outcome(name);
  return kind && kind->exit_code == 0;
}

void OutcomeCounts::add(Outcome outcome, int n) {
  const auto& kinds = outcome_kinds();
  for (std::size_t i = 0; i < kinds.size(); ++i)
    if (kinds[i].outcome == outcome) counts[i] += n;
  total += n;
}

int OutcomeCounts::of(Outcome outcome) const {
  const auto& kinds = outcome_kinds();
  for (std::size_t i = 0; i < kinds.size(); ++i)
    if (kinds[i].outcome == outcome) return counts[i];
  return 0;
}

int OutcomeCounts::not_passed() const {
  int n = 0;
  const auto& kinds = outcome_kinds();
  for (std::size_t i = 0; i < kinds.size(); ++i)
    if (!outcome_passed(kinds[i].name)) n += counts[i];
  return n;
}

std::string OutcomeCounts::line() const {
  std::ostringstream out;
  const auto& kinds = outcome_kinds();
  bool first = true;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    if (counts[i] == 0 && !kinds[i].counted_when_zero) continue;
    out << (first ? "" : ", ") << counts[i] << " " << kinds[i].counted;
    first = false;
  }
  return out.str();
}

}  // namespace distmetrics::harness
