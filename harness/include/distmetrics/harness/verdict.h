// The verdict on one variant: its outcome, and the result of every property checked.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/observation.h"
#include "distmetrics/harness/outcome.h"
#include "distmetrics/harness/variant.h"
#include "distmetrics/runtime/job.h"

namespace distmetrics::harness {

// One rank's line in a property's message ("  rank 1: 4.39   difference 0.65   <- differs"), typed:
// the views show it as it is, without reading the message.
struct RankLine {
  int rank = 0;
  std::string text;                  // what the line says after "rank N: "
  std::optional<double> difference;  // the difference it shows, when it shows one
  bool differs = false;              // marked as differing from what it was compared with
  std::optional<StepError> error;    // what the rank raised, when the line is about that
  std::string first_line() const;    // of `text` (a raised error's message may span lines)
};

// Why a property was skipped (its outcome Skip): the JSON report's "why" (peers/judged.py reads it;
// `distmetrics tables --json` lists them as "property_skips").
enum class SkipWhy {
  // It does not apply to this metric: not_applicable() (a declared convention, a state it cannot
  // save or merge), and a skip made without saying more (no reference to agree with, ...).
  NotApplicable,
  // It applies, but the step that judges it was never reached, or its evidence is missing
  // (checking.cpp's skipped(): its message says "not judged").
  NotJudged,
};
const char* to_string(SkipWhy why);  // "not_applicable", "not_judged"
// Every SkipWhy, with what it means, in the order above.
const std::vector<std::pair<SkipWhy, const char*>>& skip_whys();

struct PropertyResult {
  std::string name;
  // Pass, Fail or Skip; Hang for a check that did not finish within the variant's deadline (it
  // makes the verdict a hang).
  Outcome outcome = Outcome::Pass;
  std::string message;        // multi-line, human: what the views show
  // The lines naming the variant it judged and the command that reproduces it ("  variant: ...\n
  // reproduce: ..."): after `message` in the JSON report's and JUnit's text (a report's views say
  // them once); empty for a message without them.
  std::string variant_lines;
  // Each rank's shard ("shards: rank 0 ..."), after them: the first clue to an uneven-shard bug,
  // under the failure that leads its verdict.
  std::string shard_line;
  std::optional<ComputeResult> single;               // the single-process result it shows
  std::vector<std::optional<ComputeResult>> values;  // each rank's result it shows, by rank
  std::vector<RankLine> lines;                       // its message's per-rank lines, in order
  std::string tolerance;                             // the tolerance its message states, or empty
  std::optional<double> difference;                  // largest difference seen, when numeric
  bool expected_failure = false;    // listed in [expect] fail (and failed, as it should)
  std::string consequence_of;       // failed because of another property's root cause (root_cause.h)
  // A variant that died (hang, crash, error): the steps this verdict was judged on, all completed
  // by every rank before the death ("script steps 1-3 ('update 50%' .. 'compute')"); empty for a
  // variant that ran to its end. A kept Skip is "not judged", never a pass.
  std::string judged_before_death;
  SkipWhy why = SkipWhy::NotApplicable;  // outcome Skip: why it was not judged

  // Makes it a skip that was not judged (SkipWhy::NotJudged), its message "<name>: not judged: <why>".
  void set_not_judged(const std::string& why);
  std::string headline() const;      // the message's first line
  std::string full_message() const;  // message, variant lines, shard line: the JSON report's
  std::string shown_message() const;  // message and shard line, each line ended: what the views show
  nlohmann::json to_json() const;
};

// One collective a rank issued, for the report's per-rank timeline.
struct TraceEntry {
  std::uint64_t seq = 0;
  std::string op;                   // "all_reduce(sum)", "all_gather", ...
  std::string dtype;                // empty for barrier
  std::vector<std::int64_t> shape;  // this rank's contribution
  int script_step = 0;              // 1-based script step it was issued in; 0 when not recorded
  std::string step_text;            // that step as written ("compute"), when recorded
};

// What the report shows of one rank: how it ended, its share of the data, its collectives.
struct RankReport {
  int rank = 0;
  runtime::RankState state = runtime::RankState::Finished;  // as the runtime reported it (JSON: its to_string)
  std::optional<std::int64_t> samples;   // in its shard, when the rank reported them
  std::optional<std::int64_t> batches;
  std::vector<TraceEntry> trace;         // every collective it completed or entered, in order
  std::optional<std::uint64_t> blocked_in;  // seq of the collective it was inside when it stopped
  std::string error;                     // one line, when it raised or died

  // with_trace false: "trace" is empty (a variant that passed: its collectives explain nothing and
  // would make up most of a large report).
  nlohmann::json to_json(bool with_trace = true) const;
};

// The root cause of a variant's failed properties (root_cause.h): which properties failed
// together, and how, say what is wrong with a metric better than each failure alone.
struct RootCause {
  std::string property;                   // the property whose failure shows the cause
  std::string headline;                   // "no sync: each rank returns the result of its own data"
  std::string evidence;                   // which properties failed, and how
  std::string hint;                       // where to look
  std::vector<std::string> consequences;  // failed properties that follow from it
  nlohmann::json to_json() const;
};

// One rank's shard: the first clue to an uneven-shard bug.
struct ShardSize {
  int rank = 0;
  std::int64_t samples = 0;
  std::int64_t batches = 0;
};

// Where the ranks' collectives of one script step parted (runtime::find_step_deviation), and
// which side is blamed.
struct Deviation {
  int script_step = 0;         // 1-based
  std::optional<int> compute;  // 1-based; none outside computes
  std::uint64_t seq = 0;       // the collective `more` issued in that step and `fewer` passed it without
  std::string op;              // that collective, described
  std::vector<int> more, fewer;
  std::vector<int> blamed;     // `more`, `fewer`, or empty (an even split nothing tells apart)
};

struct Verdict {
  Variant variant;
  Outcome outcome = Outcome::Pass;
  std::string reason;  // one line: why not pass
  std::string skip_gist;  // a skip's: what the views group it by ("nccl: needs 2 GPUs"; runtime::Unavailable)
  double seconds = 0;
  std::vector<PropertyResult> properties;
  std::string diagnosis;  // hang/crash diagnosis; empty otherwise
  std::optional<RootCause> root_cause;  // of the failed properties
  std::vector<ShardSize> shards;        // each rank's, when the variant could be planned
  std::vector<RankReport> ranks;        // per rank, when the variant ran (empty for a skip)
  std::optional<Tolerance> tolerance;   // the scenario's, when the variant was judged
  std::optional<Deviation> deviation;   // a desync judged per script step
  // An error because the single-process reference ran past the deadline (its failure_past_deadline):
  // the machine's load may explain it (explore's maybe_slow).
  bool single_past_deadline = false;
  // Where its seconds went (runtime/phases.h; docs/cli-contract.md's phase table): the
  // supervisor's and the engine's phases, and each rank phase as the mean of the ranks that
  // reported theirs.
  std::map<std::string, double> phases;

  const PropertyResult* property(const std::string& name) const;
  // What the views show of a verdict that did not pass: the failed properties' messages (a
  // failure), or the reason and the diagnosis (its opening said once when it is the reason's
  // sentence); every line ended.
  std::string details() const;
  // Of a variant that died: the properties judged on the steps every rank completed before (a
  // failed one with its message, a held one, then those not judged with why), each line ended;
  // empty when none was kept. details() ends with it.
  std::string kept_verdicts_text() const;
  nlohmann::json to_json() const;  // the JSON report's per-variant object
};

}  // namespace distmetrics::harness
