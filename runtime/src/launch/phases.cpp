#include "distmetrics/runtime/phases.h"

#include <cstring>
#include <utility>
#include <vector>

namespace distmetrics::runtime {

const std::vector<PhaseKind>& phase_table() {
  static const std::vector<PhaseKind> table = {
      {"pool_start", "supervisor", "starting or restarting the rank pool: its workers forked from the zygote (or exec'd) and connected"},
      {"imports", "supervisor",
       "at a pool's (re)start: the zygote reloaded with a backend's imports, the backend's warm-up job and the sources' "
       "preload job (the workers' interpreter and imports)"},
      {"ranks", "supervisor", "the job on the ranks: from sending it to the last rank's last move (all answered, or stuck)"},
      {"hang_wait", "supervisor",
       "a job that did not end on its own: from the ranks' last move to the verdict (settle delays, a backend's own "
       "timeout, the deadline)"},
      {"end_workers", "supervisor",
       "after a hang or a crash: the hang ended in place (the ranks' collectives ended, the workers kept), or the pool's "
       "workers ended (TERM, KILL, reaping)"},
      {"plan", "engine", "the variant's data and plan in the supervisor, and the job that carries the plan to the ranks"},
      {"single_process", "engine", "the single-process run of the metric, as far as it was waited for after the ranks"},
      {"reference", "engine", "the reference implementation: agrees_with_reference, a scenario's [reference]"},
      {"judging", "engine", "judging the properties and the verdict, single_process and reference left out"},
      {"interpreter", "rank", "starting the interpreter or importing a source inside a variant"},
      {"group", "rank", "the variant's communicator and the Python metric's torch.distributed group"},
      {"data", "rank",
       "reading the rank's part of the plan it was sent, making its rows (a generator's: only the rows it feeds) and "
       "its batches"},
      {"build", "rank", "making the metric and the properties' probe instances"},
      {"update", "rank", "update(), its collectives left out"},
      {"compute", "rank", "compute(), its collectives left out"},
      {"sync", "rank", "inside collectives: the communicator's and the traced torch.distributed ones"},
      {"digest", "rank", "the state digests around each compute"},
      {"probes", "rank", "the property probes (state_roundtrip, merge_state), their collectives left out"},
      {"rank_other", "rank", "the rest of the rank's task"},
      {"setup", "run", "before the first variant: loading the sources, checking their metrics, starting the helper"},
      {"report", "run", "writing the report views; the JSON report's own writing left out"},
  };
  return table;
}

void add_phase(PhaseSeconds& phases, const std::string& name, double seconds) {
  if (seconds > 0) phases[name] += seconds;
}

double seconds_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxDepth = 16;  // deeper scopes are charged to the 16th (none nests so deep)

// One thread's clock. Phases are static strings: compared by content, so that the same name from
// two libraries adds up.
struct ThreadClock {
  bool running = false;
  std::uint64_t generation = 0;  // one per start(): a token names its job
  const char* stack[kMaxDepth + 1] = {};
  std::size_t depth = 0;  // stack[0] is the base
  Clock::time_point mark;
  std::vector<std::pair<const char*, double>> totals;

  void charge(Clock::time_point now) {
    const double seconds = seconds_between(mark, now);
    mark = now;
    const char* phase = stack[depth];
    for (auto& [name, total] : totals)
      if (name == phase || std::strcmp(name, phase) == 0) {
        total += seconds;
        return;
      }
    totals.emplace_back(phase, seconds);
  }
};

thread_local ThreadClock clock_here;

}  // namespace

void RankPhaseClock::start(const char* base) {
  ThreadClock& c = clock_here;
  c.running = true;
  ++c.generation;
  c.depth = 0;
  c.stack[0] = base;
  c.totals.clear();
  c.mark = Clock::now();
}

PhaseSeconds RankPhaseClock::take() {
  ThreadClock& c = clock_here;
  PhaseSeconds out;
  if (!c.running) return out;
  c.charge(Clock::now());
  c.running = false;
  for (const auto& [name, seconds] : c.totals) add_phase(out, name, seconds);
  return out;
}

std::uint64_t RankPhaseClock::enter(const char* phase) {
  ThreadClock& c = clock_here;
  if (!c.running || c.depth >= kMaxDepth) return 0;
  c.charge(Clock::now());
  c.stack[++c.depth] = phase;
  return (c.generation << 8) | c.depth;
}

void RankPhaseClock::leave(std::uint64_t token) {
  ThreadClock& c = clock_here;
  const std::size_t depth = token & 0xff;
  if (token == 0 || !c.running || (token >> 8) != c.generation || depth == 0 || depth > c.depth) return;
  c.charge(Clock::now());
  c.depth = depth - 1;  // a scope left out of order takes the ones inside it along
}

}  // namespace distmetrics::runtime
