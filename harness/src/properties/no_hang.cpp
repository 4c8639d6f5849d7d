// no_hang: the variant finishes within its deadline. The engine judges it from the run itself
// (harness/src/judging/: a rank to blame, a crash, what every rank was doing), so it has no
// checker; its results are made here, and only here.
#include <algorithm>
#include <iomanip>
#include <sstream>

#include "distmetrics/harness/internal/blame.h"
#include "distmetrics/harness/internal/judging.h"
#include "distmetrics/harness/number_text.h"
#include "distmetrics/harness/property.h"
#include "../unity_id.h"

namespace distmetrics::harness {
namespace properties {
namespace {
namespace DISTMETRICS_UNITY_ID {

bool always(const Scenario&) { return true; }

}  // namespace DISTMETRICS_UNITY_ID
}  // namespace

Property no_hang() {
  using namespace DISTMETRICS_UNITY_ID;
  Property p;
  p.name = "no_hang";
  p.holds_when = "the variant finishes within its deadline (always checked)";
  p.label = "no_hang";
  p.column_order = 0;
  p.checked_anyway = always;
  p.judged_by_the_engine = true;
  return p;
}

}  // namespace properties

namespace judging {

std::string left_while_waiting(const std::vector<int>& left, const std::vector<int>& waiting, double seconds) {
  return rank_list(left) + " left the collective " + rank_list(waiting) + (waiting.size() == 1 ? " waits" : " wait") +
         " in (detected after " + seconds_text(seconds) + " s)";
}

PropertyResult no_hang_failed(const std::string& why) {
  PropertyResult p;
  p.name = "no_hang";
  p.outcome = Outcome::Fail;
  p.message = "no_hang failed: " + why;
  return p;
}

PropertyResult no_hang_of_run(const runtime::JobResult& run, double deadline, double reference_seconds) {
  const double ranks = std::max(0.0, run.seconds - run.start_seconds);
  const double used = ranks + reference_seconds;
  std::ostringstream phases;
  phases << "ranks " << ranks << " s";
  if (reference_seconds > 0) phases << ", single-process reference and checks " << reference_seconds << " s";
  if (run.start_seconds > 0) phases << "; starting the rank pool took " << run.start_seconds << " s more";
  if (run.status == runtime::RunStatus::Hang) {
    // What was seen, not only that the deadline passed: a rank that left (finished, raised or
    // died) while others waited is detected when the waits give up, long before the deadline.
    std::vector<int> left, waiting;
    for (const auto& r : run.ranks) {
      if (r.blocked_in || r.state == runtime::RankState::TimedOut) waiting.push_back(r.rank);
      else if (r.state == runtime::RankState::Finished || r.state == runtime::RankState::Raised ||
               r.state == runtime::RankState::Crashed || r.blocked_on_store)  // it went elsewhere: the store
        left.push_back(r.rank);
    }
    if (!left.empty() && !waiting.empty()) return no_hang_failed(left_while_waiting(left, waiting, run.seconds));
    return no_hang_failed("no progress until the deadline (" + seconds_text(deadline) + " s)");
  }
  std::ostringstream msg;
  if (used > deadline) {
    msg << "the variant took " << used << " s, past its deadline of " << deadline << " s (" << phases.str() << ")";
    return no_hang_failed(msg.str());
  }
  PropertyResult p;
  p.name = "no_hang";
  msg << "no_hang held: finished in " << used << " s (" << phases.str() << "; deadline " << deadline << " s)";
  p.message = msg.str();
  return p;
}

}  // namespace judging
}  // namespace distmetrics::harness
