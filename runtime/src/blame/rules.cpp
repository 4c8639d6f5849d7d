// The blame rules, in the order they are tried (blame.h), and the one place a run's blame is set.
#include <stdexcept>

#include "diagnosis.h"
#include "distmetrics/runtime/blame.h"

namespace distmetrics::runtime {

const std::vector<BlameRuleInfo>& blame_rules() {
  // docs/runtime.md, "Diagnosis and blame", lists these rules in this order (a test checks it).
  static const std::vector<BlameRuleInfo> rules = {
      {BlameRule::PoolStartFailed, "pool_start_failed", "the rank pool could not start its ranks",
       "the rank whose start failed (none when unknown)"},
      {BlameRule::StepPattern, "step_pattern",
       "in the first script step where they part, some ranks passed the step without a collective others issued in it",
       "the side whose sequence for that step breaks the pattern of the other steps of its kind where the ranks agree"},
      {BlameRule::StepFewerSide, "step_fewer_side", "a step parted and no other step tells the sides apart",
       "the fewer ranks"},
      {BlameRule::StepEvenSplit, "step_even_split", "a step parted with as many ranks on each side, nothing tells them apart",
       "none (on a crash: the first that crashed)"},
      {BlameRule::MismatchSmallestGroup, "mismatch_smallest_group",
       "no step parted, but ranks issued different collectives at one sequence number",
       "the smallest group (as large: the group without the lowest rank)"},
      {BlameRule::CrashFirst, "crash_first", "a rank died, after no divergence that names a rank",
       "the first that died of something other than writing to a closed peer (SIGPIPE)"},
      {BlameRule::ExtraCollective, "extra_collective",
       "fewer ranks wait in a collective than finished their task without issuing it", "the first waiting rank"},
      {BlameRule::NeverEntered, "never_entered", "ranks never entered the collective their peers wait in",
       "the first of them"},
      {BlameRule::UnseenCollective, "unseen_collective",
       "every rank entered the collective, some completed it and went on while others still wait in it",
       "the fewer side (as many: the ranks that went on)"},
      {BlameRule::BackendStalled, "backend_stalled", "every rank waits in the same collective", "none"},
      {BlameRule::Late, "late", "no rank is inside a collective; some did not finish by the deadline",
       "the first late rank"},
      {BlameRule::EveryRankLate, "every_rank_late", "every rank did not finish by the deadline", "none"},
      {BlameRule::EveryRankRaised, "every_rank_raised", "every rank raised", "none"},
      {BlameRule::FirstRaiser, "first_raiser", "some ranks raised, the others finished", "the first that raised"},
      {BlameRule::SilentPeers, "silent_peers",
       "peer runner, on a hang: ranks sent nothing by the deadline plus the grace while the others reported",
       "the silent rank (several: none)"},
      {BlameRule::NoReportFromRank0, "no_report_from_rank0", "peer runner: rank 0 sent no report", "rank 0"},
      {BlameRule::EvenSplitByBaseline, "even_split_by_baseline",
       "the harness: an even split, and a baseline's sequence for that step is one side's", "the other side"},
      {BlameRule::MismatchTieByBaseline, "mismatch_tie_by_baseline",
       "the harness: a mismatch whose groups are as large, and a baseline's sequence begins one group's",
       "the other groups"},
      {BlameRule::MemoryExceeded, "memory_exceeded", "the harness: a rank went past its memory limit",
       "the first such rank"},
      {BlameRule::RaisedAlone, "raised_alone",
       "the harness, on a hang: a rank left its script on an error while others waited", "the first that raised"},
      {BlameRule::AbandonedWait, "abandoned_wait",
       "the harness, every task finished: a rank's own wait gave up after a peer raised or left its script",
       "the earliest raise before the first timeout, else the first rank that finished"},
  };
  return rules;
}

const BlameRuleInfo& blame_rule_info(BlameRule rule) {
  for (const auto& info : blame_rules())
    if (info.rule == rule) return info;
  static const BlameRuleInfo none{BlameRule::None, "none", "the run completed, or nothing was judged", "none"};
  return none;
}

const char* to_string(BlameRule rule) { return blame_rule_info(rule).name; }

BlameRule blame_rule_from_string(const std::string& text) {
  if (text == "none") return BlameRule::None;
  for (const auto& info : blame_rules())
    if (text == info.name) return info.rule;
  throw std::invalid_argument("unknown blame rule '" + text + "'");
}

}  // namespace distmetrics::runtime

namespace distmetrics::runtime::detail {

void assign_blame(JobResult& run, BlameRule rule, int rank) {
  run.blame_rule = rule;
  run.blamed_rank = rank;
}

void blame_failed_start(JobResult& run, int failed_rank) { assign_blame(run, BlameRule::PoolStartFailed, failed_rank); }

void blame_silent_rank0(JobResult& run) { assign_blame(run, BlameRule::NoReportFromRank0, 0); }

bool blame_silent_ranks(JobResult& run, const std::vector<int>& silent, std::size_t world_size) {
  if (run.status != RunStatus::Hang || silent.empty() || silent.size() >= world_size) return false;
  assign_blame(run, BlameRule::SilentPeers, silent.size() == 1 ? silent.front() : -1);
  return true;
}

void prefix_diagnosis(JobResult& run, const std::string& text) {
  run.diagnosis = text + run.diagnosis;
  if (!run.diagnosis_once_told.empty()) run.diagnosis_once_told = text + run.diagnosis_once_told;
}

void add_diagnosis_line(JobResult& run, const std::string& line) {
  run.diagnosis += (run.diagnosis.empty() ? "" : "\n") + line;
  if (!run.diagnosis_once_told.empty()) run.diagnosis_once_told += "\n" + line;
}

}  // namespace distmetrics::runtime::detail
