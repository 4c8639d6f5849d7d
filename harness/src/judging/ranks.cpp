// Each rank's result decoded once (internal/judging.h), and what the report and the diagnosis
// show of each rank.
#include "distmetrics/harness/internal/judging.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness::judging {

std::vector<RankRun> decode_ranks(const runtime::JobResult& run) {
  std::vector<RankRun> out;
  for (const auto& r : run.ranks) {
    RankRun decoded;
    decoded.outcome = &r;
    decoded.rank = r.rank;
    if (r.state == runtime::RankState::Finished && r.result.is_object()) {
      try {
        decoded.observation = RankObservation::from_json(r.result);
      } catch (const std::exception& e) {
        decoded.unreadable = e.what();
      }
    } else if (r.state == runtime::RankState::Finished) {
      decoded.unreadable = "its result is not an observation";
    }
    out.push_back(std::move(decoded));
  }
  return out;
}

std::vector<RankReport> rank_reports(const Scenario& scenario, const std::vector<RankRun>& ranks) {
  std::vector<RankReport> out;
  auto entry_of = [&](const runtime::CollectiveRecord& record) {
    TraceEntry entry{record.seq, record.op, record.dtype, record.shape, 0, ""};
    if (record.step >= 0) {  // the step the record was stamped with (Communicator::set_issuer)
      entry.script_step = record.step + 1;
      if (static_cast<std::size_t>(record.step) < scenario.script.size()) entry.step_text = scenario.script[record.step].text;
    }
    return entry;
  };
  for (const auto& run : ranks) {
    const auto& r = *run.outcome;
    RankReport report;
    report.rank = r.rank;
    report.state = r.state;
    if (run.observation) {
      report.samples = run.observation->samples;
      report.batches = run.observation->batches;
      if (const auto& e = run.observation->error)
        report.error = e->type + " at " + e->op + ": " + runtime::first_line(e->message);
    }
    for (const auto& record : r.trace) report.trace.push_back(entry_of(record));
    if (r.blocked_in) {
      report.blocked_in = r.blocked_in->seq;
      // A rank blocked inside a collective it had not completed: the trace shows it too.
      if (report.trace.empty() || report.trace.back().seq < r.blocked_in->seq) report.trace.push_back(entry_of(*r.blocked_in));
    }
    if (report.error.empty() && !r.error.empty())
      report.error = (r.error_type.empty() ? "" : r.error_type + ": ") + runtime::first_line(r.error);
    if (report.error.empty() && !r.how_died.empty()) report.error = r.how_died;
    out.push_back(std::move(report));
  }
  return out;
}

}  // namespace distmetrics::harness::judging
