// Where a variant's time goes, by phase (docs/performance.md, "Where a Python variant's time
// goes"; the names are docs/cli-contract.md's phase table): wall seconds per named phase.
//
// The rank side measures itself with the phase clock below, on the thread that runs the task,
// and sends the totals back with its outcome (RankOutcome::phases); the supervisor measures its
// own phases (JobResult::phases); the engine adds what it does around them (Verdict::phases).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace distmetrics::runtime {

using PhaseSeconds = std::map<std::string, double>;

// Every phase a report names, in the order the docs and the phase table show them.
struct PhaseKind {
  const char* name;
  const char* measured_by;  // "supervisor", "engine", "rank" (a variant's), or "run" (the whole run's)
  const char* what;
};
const std::vector<PhaseKind>& phase_table();

// Adds `seconds` to phases[name] (a phase may be measured in several pieces).
void add_phase(PhaseSeconds& phases, const std::string& name, double seconds);
double seconds_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to);

// The rank's phase clock: between start() and take() on one thread, each moment belongs to the
// innermost phase entered (a collective inside update() is "sync", not "update"), and what no
// phase claims to `base`. Elsewhere (another thread, no job) enter() costs a branch and leave()
// nothing: the scopes may sit in code that also runs outside a rank (the supervisor's reference).
class RankPhaseClock {
 public:
  static void start(const char* base);
  static PhaseSeconds take();  // the totals since start(); the clock stops
  // Returns a token for leave(), 0 when the clock does not run: a leave() after take() or after a
  // later start() (a scope that outlived its job) changes nothing.
  static std::uint64_t enter(const char* phase);
  static void leave(std::uint64_t token);
};

class PhaseScope {
 public:
  explicit PhaseScope(const char* phase) : token_(RankPhaseClock::enter(phase)) {}
  ~PhaseScope() { end(); }
  void end() {  // before the scope's end
    RankPhaseClock::leave(token_);
    token_ = 0;
  }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  std::uint64_t token_;
};

}  // namespace distmetrics::runtime
