// When rank 0 of a peer launch stops waiting for the ranks' outcomes, and what it says of a rank
// that sent none: decided from what each rank said and when (its outcome, its own connection to
// the store closing, its runner's heartbeats), not from one race against a timer. A pure
// function of what rank 0 knows at one moment, so that it is tested with fixed inputs.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "distmetrics/runtime/job.h"

namespace distmetrics::runtime::detail {

// Across hosts every rank's runner but rank 0's sends a heartbeat this often, on a connection of
// its own to rank 0's store, from its check-in until it leaves (whatever its task is doing). A
// beat is one small request (~250 bytes on the wire with its answer): 4 a second stay a few per
// cent of even a 64 kbit/s link (the multi-host tests' slow link).
constexpr std::chrono::milliseconds kBeatPeriod{250};

struct GatherMargins {
  // Nothing heard from a rank for longer than this (8 beats): it is cut off or stopped. A rank
  // still heard that has not reported is late (a loaded machine), never "sent nothing".
  std::chrono::milliseconds silence{2000};
  // How long past the report deadline rank 0 waits for a rank that is still heard.
  std::chrono::milliseconds late{2000};
  // After the launcher's SIGTERM, how long rank 0 waits for the loss that made the launcher end
  // the job to show (the lost host's ranks' connections closing: mpirun may send SIGTERM within
  // 20 ms of losing a host, and a killed rank of a few GB closes its sockets only once its memory
  // is released, 0.1-0.3 s later under load), then decides with what it has. SIGKILL follows the
  // SIGTERM by 1 s (Open MPI's default): half of that is left to write the report.
  std::chrono::milliseconds teardown_settle{500};
};
// The margins for a run's report grace: silence 2 s; late the grace, at least 2 s.
GatherMargins gather_margins(std::chrono::milliseconds report_grace);

// What rank 0 knows of one rank at one moment.
struct RankHearing {
  bool reported = false;  // its outcome for the job is in the store
  bool gone = false;      // its own connection to the store closed: its process, or its host, is gone
  // How long since rank 0 last heard from it (any message on its connections); nullopt: never
  // (on one host ranks send no heartbeats).
  std::optional<std::chrono::milliseconds> silent_for;
};

enum class Heard {
  Reported,  // its outcome is there
  Gone,      // crashed: its connection closed before it reported
  Late,      // no outcome yet, but heard within the silence margin
  Silent,    // no outcome, nothing heard within the silence margin (or never): cut off or stopped
};
const char* to_string(Heard heard);

struct GatherDecision {
  bool done = false;  // stop waiting and diagnose now
  bool loss = false;  // a rank is gone without an outcome: the verdict (a crash) is known now
  bool late_margin_over = false;  // done because ranks still heard did not report within the late margin
  std::vector<Heard> ranks;  // by rank (rank 0, the gatherer, is Reported)
};

// The launcher's teardown as the gather sees it: whether its SIGTERM came (held by rank 0), and
// how long ago rank 0 first saw it.
struct Teardown {
  bool requested = false;
  std::chrono::milliseconds since{0};
};

// `ranks` by rank, rank 0 included (reported); `past_report_deadline`: now minus the report
// deadline (the job's deadline plus the report grace), negative before it. Done when every rank
// reported or is gone; at once when a rank is gone without an outcome (the loss decides the
// verdict); on a teardown `margins.teardown_settle` after it; at the report deadline unless a rank that has not
// reported is still heard; and at the report deadline plus `margins.late` whatever is missing.
GatherDecision decide_gather(const std::vector<RankHearing>& ranks, std::chrono::milliseconds past_report_deadline,
                             const GatherMargins& margins, const Teardown& teardown = {});

// After diagnose(): a hang where ranks the decision left Silent (no outcome, their connection
// open, nothing heard within the silence margin) while the others reported is blamed on them
// (one: that rank; several: none), the cause first, with how long each was not heard; what the
// others saw follows from it. A rank that is still heard is never among them, however late.
void blame_the_silent(JobResult& run, const GatherDecision& decision, const std::vector<RankHearing>& hearing,
                      std::chrono::milliseconds report_grace);
// Ranks left Late when the late margin ran out: their runner beats but sent no outcome. Said at
// the end of the diagnosis, not blamed as cut off.
void say_who_was_late(JobResult& run, const GatherDecision& decision, const std::vector<RankHearing>& hearing,
                      std::chrono::milliseconds report_grace);

}  // namespace distmetrics::runtime::detail
