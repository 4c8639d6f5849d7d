// The step script: what every rank does with its shard.
//
//   update            each rank feeds its next batch
//   update N          ... its next N batches
//   update P%         ... its next ceil(P% of its batches)
//   update rest       ... all its remaining batches
//   update empty      ... calls update() once with a batch of no rows (it must change nothing)
//   update ... ranks=0,2   only the listed ranks feed (the others skip this step)
//   compute           compute() on every rank
//   reset             reset() on every rank; the next updates start again from its first batch
//   replay            feed again every batch fed before the last reset
//   compute every     from here on, every update or replay step computes after each batch it feeds
//                     (torchmetrics' dist_sync_on_step, Ignite's per-iteration compute): its t-th
//                     round feeds every rank's t-th batch of the step (a rank out of batches feeds
//                     nothing), then computes on every rank
//
// Simulating a script over a shard plan tells, for every compute, which batches each rank has
// fed since the last reset: the task uses it to feed, the supervisor to build the
// single-process reference and to decide which property judges which compute.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace distmetrics::harness {

struct Step {
  enum class Op { Update, Compute, Reset, Replay, ComputeEvery };
  enum class Amount { Batches, Percent, Rest, Empty };
  Op op = Op::Compute;
  Amount amount = Amount::Batches;
  double count = 1;        // batches (Amount::Batches) or percent (Amount::Percent)
  std::vector<int> ranks;  // update only: the ranks that feed; empty: all
  std::string text;        // as written in the scenario
};

// Throws std::invalid_argument with a message that says what a step may look like.
Step parse_step(const std::string& text);
// update 50%, compute, compute, update empty ranks=0, update rest, update empty, compute, reset,
// replay, compute: an empty batch on one rank and on all (per_step: without the empty updates)
std::vector<std::string> default_script_text(const std::string& single_process = "global");

// Which property judges a compute, by where it sits in the script.
enum class ComputeRole {
  Fresh,        // first compute since the start: equal_to_single
  Repeat,       // directly after a compute: idempotent
  AfterUpdate,  // after an earlier compute and more updates: update_after_compute
  AfterReset,   // first compute after a reset: reset_replay
};
const char* to_string(ComputeRole role);

struct ComputePoint {
  int index = 0;  // 0-based among the script's computes
  int step = 0;   // index of the step
  ComputeRole role = ComputeRole::Fresh;
  std::vector<std::size_t> fed;  // per rank: batches [0, fed[r]) fed since the last reset
  int previous = -1;   // Repeat: the compute just before
  int replay_of = -1;  // AfterReset: an earlier first-of-its-epoch compute that saw exactly the same batches, if any
  bool all_data = false;  // every rank had fed all of its batches
};

struct StepAction {
  Step::Op op = Step::Op::Compute;
  // Update/Replay: per rank, the batches [first, second) to feed now.
  std::vector<std::pair<std::size_t, std::size_t>> feed;
  // Update ('update empty'): per rank, whether it calls update() with an empty batch; empty when
  // no rank does.
  std::vector<bool> empty_update;
  int compute = -1;  // Compute: its index among the computes
  // Update/Replay after 'compute every': per round, the compute that follows it (its index among
  // the computes); round t feeds batch feed[r].first + t of every rank r that has it.
  std::vector<int> round_computes;
};

struct ScriptPlan {
  std::vector<StepAction> steps;
  std::vector<ComputePoint> computes;
};

// `batches_per_rank[r]` is how many batches rank r holds.
ScriptPlan simulate_script(const std::vector<Step>& script, const std::vector<std::size_t>& batches_per_rank);

// Structural checks that do not depend on the shard plan (at least one compute; replay only
// after a reset). Returns a message per problem with the step index.
std::vector<std::pair<int, std::string>> check_script(const std::vector<Step>& script);

// Which roles the script produces (independent of the data).
std::vector<ComputeRole> roles_in(const std::vector<Step>& script);

}  // namespace distmetrics::harness
