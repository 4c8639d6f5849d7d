// A variant's plan as JSON (VariantPlan::to_json, from_json, rank_from_json; engine.h): how the
// supervisor's plan travels to the ranks and to conform's helper worker, which use it as it is.
//
// A rank's batches are written as runs of arithmetic progressions, so that the plan of a policy
// that cuts ranges (even, uneven, empty_rank, round_robin, scattered, padded) takes a few numbers
// per rank, whatever the number of samples:
//   {"batches": n, "first": f, "size": s, "step": d, "next": e}
//       n batches of s samples; sample k of batch j is f + j * e + k * d (d defaults to 1, e to
//       s * d: the next batch carries on where this one ends; a run of empty batches is
//       {"batches": n, "size": 0})
//   {"rows": [...]}
//       one batch that is no progression (skewed, the wrap of padded): its rows as segments, each
//       an index, [first, count] (consecutive) or [first, count, step]
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "distmetrics/harness/engine.h"

namespace distmetrics::harness {
namespace {

using nlohmann::json;

// A batch that is an arithmetic progression: `size` samples first, first + step, ...
struct Progression {
  std::int64_t first = 0;
  std::int64_t size = 0;
  std::int64_t step = 1;
};

// The batch as one progression (an empty batch or a single sample is one, with step 1).
std::optional<Progression> as_progression(const SampleIndices& batch) {
  Progression p;
  p.size = static_cast<std::int64_t>(batch.size());
  if (batch.empty()) return p;
  p.first = batch.front();
  if (batch.size() == 1) return p;
  p.step = batch[1] - batch[0];
  for (std::size_t k = 2; k < batch.size(); ++k)
    if (batch[k] - batch[k - 1] != p.step) return std::nullopt;
  return p;
}

// Batches that follow one another as one run: the same size and step, each first `next` after
// the one before.
struct Run {
  Progression batch;
  std::int64_t batches = 1;
  std::int64_t next = 0;  // set once the run holds two batches

  bool takes(const Progression& p) const {
    if (p.size != batch.size || p.step != batch.step) return false;
    if (batch.size == 0) return true;
    const std::int64_t gap = p.first - (batch.first + (batches - 1) * next);
    return batches == 1 || gap == next;
  }
  void add(const Progression& p) {
    if (batches == 1) next = p.first - batch.first;
    ++batches;
  }
  json to_json() const {
    json out = {{"batches", batches}, {"size", batch.size}};
    if (batch.size == 0) return out;
    out["first"] = batch.first;
    if (batch.step != 1) out["step"] = batch.step;
    if (batches > 1 && next != batch.size * batch.step) out["next"] = next;
    return out;
  }
};

// The rows of a batch that is no progression: runs of three or more equal steps as segments,
// the rest one index each.
json rows_to_json(const SampleIndices& batch) {
  json rows = json::array();
  std::size_t i = 0;
  while (i < batch.size()) {
    std::size_t end = i + 1;  // the progression batch[i], batch[i + 1], ... up to end
    if (i + 1 < batch.size()) {
      const std::int64_t step = batch[i + 1] - batch[i];
      end = i + 2;
      while (end < batch.size() && batch[end] - batch[end - 1] == step) ++end;
      if (end - i >= 3) {
        const auto count = static_cast<std::int64_t>(end - i);
        rows.push_back(step == 1 ? json::array({batch[i], count}) : json::array({batch[i], count, step}));
        i = end;
        continue;
      }
    }
    rows.push_back(batch[i]);
    ++i;
  }
  return {{"rows", std::move(rows)}};
}

json rank_batches_to_json(const std::vector<SampleIndices>& batches) {
  json out = json::array();
  std::optional<Run> run;
  for (const auto& batch : batches) {
    const auto p = as_progression(batch);
    if (run && p && run->takes(*p)) {
      run->add(*p);
      continue;
    }
    if (run) out.push_back(run->to_json());
    run.reset();
    if (p) run = Run{*p};
    else out.push_back(rows_to_json(batch));
  }
  if (run) out.push_back(run->to_json());
  return out;
}

std::int64_t nonnegative_count(const json& j, const char* key) {
  const auto n = j.at(key).get<std::int64_t>();
  if (n < 0) throw std::invalid_argument(std::string("a plan's batches: '") + key + "' is negative");
  return n;
}

std::vector<SampleIndices> rank_batches_from_json(const json& items) {
  std::vector<SampleIndices> batches;
  for (const auto& item : items) {
    if (item.contains("rows")) {
      SampleIndices& batch = batches.emplace_back();
      for (const auto& segment : item.at("rows")) {
        if (segment.is_number_integer()) {
          batch.push_back(segment.get<std::int64_t>());
          continue;
        }
        const auto first = segment.at(0).get<std::int64_t>(), count = segment.at(1).get<std::int64_t>();
        const std::int64_t step = segment.size() > 2 ? segment.at(2).get<std::int64_t>() : 1;
        for (std::int64_t k = 0; k < count; ++k) batch.push_back(first + k * step);
      }
      continue;
    }
    const std::int64_t n = nonnegative_count(item, "batches"), size = nonnegative_count(item, "size");
    const std::int64_t first = item.value("first", std::int64_t{0}), step = item.value("step", std::int64_t{1});
    const std::int64_t next = item.value("next", size * step);
    for (std::int64_t j = 0; j < n; ++j) {
      SampleIndices& batch = batches.emplace_back(static_cast<std::size_t>(size));
      for (std::int64_t k = 0; k < size; ++k) batch[static_cast<std::size_t>(k)] = first + j * next + k * step;
    }
  }
  return batches;
}

const char* op_name(Step::Op op) {
  switch (op) {
    case Step::Op::Update: return "update";
    case Step::Op::Compute: return "compute";
    case Step::Op::Reset: return "reset";
    case Step::Op::Replay: return "replay";
    case Step::Op::ComputeEvery: return "compute_every";
  }
  return "?";
}

Step::Op op_from_name(const std::string& name) {
  for (auto op : {Step::Op::Update, Step::Op::Compute, Step::Op::Reset, Step::Op::Replay, Step::Op::ComputeEvery})
    if (name == op_name(op)) return op;
  throw std::invalid_argument("a plan's script: unknown step '" + name + "'");
}

ComputeRole role_from_name(const std::string& name) {
  for (auto role : {ComputeRole::Fresh, ComputeRole::Repeat, ComputeRole::AfterUpdate, ComputeRole::AfterReset})
    if (name == to_string(role)) return role;
  throw std::invalid_argument("a plan's script: unknown compute role '" + name + "'");
}

json step_to_json(const StepAction& action) {
  json out = {{"op", op_name(action.op)}};
  if (!action.feed.empty()) {
    json feed = json::array();
    for (const auto& [from, to] : action.feed) feed.push_back({from, to});
    out["feed"] = std::move(feed);
  }
  if (!action.empty_update.empty()) out["empty_update"] = action.empty_update;
  if (action.compute >= 0) out["compute"] = action.compute;
  if (!action.round_computes.empty()) out["round_computes"] = action.round_computes;
  return out;
}

StepAction step_from_json(const json& j) {
  StepAction action;
  action.op = op_from_name(j.at("op").get<std::string>());
  for (const auto& range : j.value("feed", json::array()))
    action.feed.emplace_back(range.at(0).get<std::size_t>(), range.at(1).get<std::size_t>());
  action.empty_update = j.value("empty_update", std::vector<bool>{});
  action.compute = j.value("compute", -1);
  action.round_computes = j.value("round_computes", std::vector<int>{});
  return action;
}

json compute_to_json(const ComputePoint& point) {
  json out = {{"index", point.index}, {"step", point.step}, {"role", to_string(point.role)}, {"fed", point.fed}};
  if (point.previous >= 0) out["previous"] = point.previous;
  if (point.replay_of >= 0) out["replay_of"] = point.replay_of;
  if (point.all_data) out["all_data"] = true;
  return out;
}

ComputePoint compute_from_json(const json& j) {
  ComputePoint point;
  point.index = j.at("index");
  point.step = j.at("step");
  point.role = role_from_name(j.at("role").get<std::string>());
  point.fed = j.at("fed").get<std::vector<std::size_t>>();
  point.previous = j.value("previous", -1);
  point.replay_of = j.value("replay_of", -1);
  point.all_data = j.value("all_data", false);
  return point;
}

ScriptPlan script_from_json(const json& j) {
  ScriptPlan script;
  for (const auto& step : j.at("steps")) script.steps.push_back(step_from_json(step));
  for (const auto& point : j.at("computes")) script.computes.push_back(compute_from_json(point));
  return script;
}

}  // namespace

json VariantPlan::to_json() const {
  json ranks = json::array();
  for (const auto& batches : shards.ranks) ranks.push_back(rank_batches_to_json(batches));
  json steps = json::array(), computes = json::array();
  for (const auto& action : script.steps) steps.push_back(step_to_json(action));
  for (const auto& point : script.computes) computes.push_back(compute_to_json(point));
  return {{"shards",
           {{"policy", shards.policy}, {"world_size", shards.world_size}, {"duplicates", shards.duplicates},
            {"ranks", std::move(ranks)}}},
          {"script", {{"steps", std::move(steps)}, {"computes", std::move(computes)}}}};
}

VariantPlan VariantPlan::from_json(const json& j) {
  VariantPlan plan;
  const json& shards = j.at("shards");
  plan.shards.policy = shards.at("policy");
  plan.shards.world_size = shards.at("world_size");
  plan.shards.duplicates = shards.at("duplicates");
  for (const auto& rank : shards.at("ranks")) plan.shards.ranks.push_back(rank_batches_from_json(rank));
  if (static_cast<int>(plan.shards.ranks.size()) != plan.shards.world_size)
    throw std::invalid_argument("a plan's shards: " + std::to_string(plan.shards.ranks.size()) + " ranks for world size " +
                                std::to_string(plan.shards.world_size));
  plan.script = script_from_json(j.at("script"));
  return plan;
}

RankPlan VariantPlan::rank_from_json(const json& j, int rank) {
  const json& ranks = j.at("shards").at("ranks");
  if (rank < 0 || rank >= static_cast<int>(ranks.size()))
    throw std::invalid_argument("a plan for " + std::to_string(ranks.size()) + " ranks has no rank " + std::to_string(rank));
  return {rank_batches_from_json(ranks.at(static_cast<std::size_t>(rank))), script_from_json(j.at("script"))};
}

}  // namespace distmetrics::harness
