// Who is blamed when a job's ranks did not finish together, and by which rule: one module
// (runtime/src/blame/) for the rank pool, the peer runner and the harness alike. The runtime
// reports what each rank did (RankOutcome: its state, its collectives, the one it is blocked in);
// the rules below decide from those facts, in order, and the harness hands in what only it knows
// as typed evidence (a baseline's sequence of collectives for a step, which ranks left their
// script on an error, when each rank's wait gave up). docs/runtime.md, "Diagnosis and blame",
// lists the same rules.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/runtime/desync.h"
#include "distmetrics/runtime/job.h"

namespace distmetrics::runtime {

// One rule of the table: its name (BlameRule's to_string), when it applies, whom it blames.
struct BlameRuleInfo {
  BlameRule rule;
  const char* name;
  const char* when;
  const char* blamed;
};
// Every rule, in the order they are tried: the runner's own (a rank that never started or never
// reported), the desync rules (a step parted, a mismatch), then by the run's status, then the
// harness's evidence, which overrules the runtime's where the runtime could not tell.
const std::vector<BlameRuleInfo>& blame_rules();
const BlameRuleInfo& blame_rule_info(BlameRule rule);

// --- the harness's evidence ---------------------------------------------------------------

// An even split (deviation.blamed empty) that a baseline tells apart: `baseline` is what the
// metric issues in the deviation's step elsewhere (another variant whose ranks agreed, the
// single-process run). The side whose sequence it shows is the metric's; the other is blamed
// (rule EvenSplitByBaseline). Nothing when it matches both sides or neither.
struct SideTold {
  bool fewer_is_right = false;  // the baseline shows the fewer side's sequence: `more` deviated
  std::vector<int> blamed;      // deviation.more or deviation.fewer
  std::vector<int> spared;
};
std::optional<SideTold> tell_even_split(const std::vector<RankOutcome>& ranks, const StepDeviation& deviation,
                                        const std::vector<CollectiveRecord>& baseline);

// A mismatch tie (CollectiveMismatch::tie(): only the ranks' order chose the blamed group) that a
// baseline tells apart: every group's collective there was issued in the same step, and exactly
// one group's sequence in that step, through it, begins the baseline's. The other groups are
// blamed (rule MismatchTieByBaseline), sorted.
struct GroupTold {
  std::size_t spared_group = 0;  // index into mismatch.groups
  std::vector<int> blamed;
};
// Whether a baseline of one step could tell the tie apart at all (every group's collective there
// was issued in the same script step): a judge asks for a baseline only then.
bool mismatch_tie_in_one_step(const CollectiveMismatch& mismatch);
std::optional<GroupTold> tell_mismatch_tie(const std::vector<RankOutcome>& ranks, const CollectiveMismatch& mismatch,
                                           const std::vector<CollectiveRecord>& baseline);

// The ranks that went past their memory limit (error type kRankMemoryExceeded, errors.h), in
// rank order: the first is blamed (rule MemoryExceeded), whatever its peers did after it left
// them waiting. Empty when none did.
std::vector<int> ranks_past_their_memory(const std::vector<RankOutcome>& ranks);

// A rank that left its script on an error while others waited in a collective (rule RaisedAlone,
// PyTorch-Ignite #1242). `left_on_error[r]`: rank r finished its task having recorded an error
// (the harness's observation); a rank that Raised anything but a CollectiveError left too. The
// first raiser is blamed; nothing unless some rank raised and some waited (TimedOut, Stuck, Ended).
struct RaisedAlone {
  std::vector<int> raisers, waiters;
  int blamed() const { return raisers.front(); }
};
std::optional<RaisedAlone> find_raised_alone(const std::vector<RankOutcome>& ranks, const std::vector<bool>& left_on_error);

// How a rank's script ended where every rank finished its task (the harness's observations): a
// wait that gave up inside a metric's own c10d call, another error, or no error.
struct ScriptEnd {
  enum class How { Finished, Raised, WaitTimedOut };
  int rank = 0;
  How how = How::Finished;
  double at = 0;  // when it raised (seconds, one clock for all ranks); unused for Finished
};
// A rank that raised (or finished its script) before a peer's wait gave up: the peer waited for
// it (rule AbandonedWait). A raise before the first timeout is the cause (the earliest); else the
// first rank that finished. Nothing when no wait timed out, every wait did, or none is to blame.
struct AbandonedWaitBlame {
  int blamed = -1;
  bool blamed_raised = false;  // the blamed rank raised (else it finished its script)
  std::vector<int> waiting;    // ranks whose wait timed out, in the order given
  double first_timeout = 0;
};
std::optional<AbandonedWaitBlame> find_abandoned_wait_blame(const std::vector<ScriptEnd>& ends);

}  // namespace distmetrics::runtime
