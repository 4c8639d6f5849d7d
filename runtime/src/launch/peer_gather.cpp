#include "peer_gather.h"

#include <algorithm>
#include <string>

#include "../blame/diagnosis.h"

namespace distmetrics::runtime::detail {

using namespace std::chrono_literals;

GatherMargins gather_margins(std::chrono::milliseconds report_grace) {
  GatherMargins margins;
  margins.silence = 2s;
  margins.late = std::max<std::chrono::milliseconds>(report_grace, 2s);
  return margins;
}

const char* to_string(Heard heard) {
  switch (heard) {
    case Heard::Reported: return "reported";
    case Heard::Gone: return "gone";
    case Heard::Late: return "late";
    case Heard::Silent: return "silent";
  }
  return "?";
}

GatherDecision decide_gather(const std::vector<RankHearing>& ranks, std::chrono::milliseconds past_report_deadline,
                             const GatherMargins& margins, const Teardown& teardown) {
  GatherDecision decision;
  bool missing = false, late = false;
  for (const auto& rank : ranks) {
    Heard heard = Heard::Silent;
    if (rank.reported) heard = Heard::Reported;
    else if (rank.gone) heard = Heard::Gone;
    else if (rank.silent_for && *rank.silent_for <= margins.silence) heard = Heard::Late;
    decision.ranks.push_back(heard);
    decision.loss |= heard == Heard::Gone;
    missing |= heard == Heard::Late || heard == Heard::Silent;
    late |= heard == Heard::Late;
  }
  const bool past = past_report_deadline >= 0ms;
  const bool torn_down = teardown.requested && teardown.since >= margins.teardown_settle;
  decision.done = !missing || decision.loss || torn_down || (past && !late) || past_report_deadline >= margins.late;
  decision.late_margin_over = decision.done && late && !decision.loss && !torn_down;
  return decision;
}

namespace {

std::vector<int> ranks_heard_as(const GatherDecision& decision, Heard heard) {
  std::vector<int> ranks;
  for (size_t r = 0; r < decision.ranks.size(); ++r) {
    if (decision.ranks[r] == heard) ranks.push_back(static_cast<int>(r));
  }
  return ranks;
}

std::string ms(std::chrono::milliseconds value) { return std::to_string(value.count()) + " ms"; }

}  // namespace

void blame_the_silent(JobResult& run, const GatherDecision& decision, const std::vector<RankHearing>& hearing,
                      std::chrono::milliseconds report_grace) {
  const std::vector<int> silent = ranks_heard_as(decision, Heard::Silent);
  if (!blame_silent_ranks(run, silent, decision.ranks.size())) return;
  std::string heard;
  for (size_t i = 0; i < silent.size(); ++i) {
    const auto& since = hearing[silent[i]].silent_for;
    heard += std::string(i ? ", " : "") + (silent.size() > 1 ? "rank " + std::to_string(silent[i]) + " " : std::string()) +
             (since ? "not heard for " + ms(*since) : std::string("never heard"));
  }
  const bool one = silent.size() == 1;
  prefix_diagnosis(run, describe_ranks(silent) + " sent nothing by the deadline plus " + ms(report_grace) +
                            " while the other ranks reported (" + heard + "; a rank not heard for " +
                            ms(gather_margins(report_grace).silence) + " is taken as cut off): " +
                            (one ? "it is" : "they are") +
                            " cut off (a network partition, its host down) or stopped. What the others saw follows from it:\n");
}

void say_who_was_late(JobResult& run, const GatherDecision& decision, const std::vector<RankHearing>& hearing,
                      std::chrono::milliseconds report_grace) {
  const std::vector<int> late = ranks_heard_as(decision, Heard::Late);
  if (!decision.late_margin_over || late.empty()) return;
  std::string text = describe_ranks(late) + (late.size() == 1 ? " was" : " were") + " still heard (";
  for (size_t i = 0; i < late.size(); ++i) {
    const auto& since = hearing[late[i]].silent_for;
    text += std::string(i ? ", " : "") + "rank " + std::to_string(late[i]) + (since ? " " + ms(*since) + " before" : "");
  }
  text += ") but sent no outcome by the deadline plus " + ms(report_grace) + " and " + ms(gather_margins(report_grace).late) +
          " more: a loaded machine, or a runner stuck outside its task.";
  add_diagnosis_line(run, text);
}

}  // namespace distmetrics::runtime::detail
