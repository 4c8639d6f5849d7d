#include "distmetrics/harness/variant.h"

#include <fnmatch.h>

#include <algorithm>

#include "distmetrics/harness/placement.h"
#include "distmetrics/harness/shard.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness {

std::string variant_id(const std::string& scenario, const std::string& backend, int world_size,
                       const std::string& shard, const std::string& placement, const std::string& dtype) {
  return scenario + ":" + backend + "-ws" + std::to_string(world_size) + "-" + shard + "-" + placement +
         (dtype.empty() ? "" : "-" + dtype);
}

std::string Variant::short_id() const {
  return backend + "-ws" + std::to_string(world_size) + "-" + shard + "-" + placement + (dtype.empty() ? "" : "-" + dtype);
}

std::string Variant::reproduce() const {
  if (!reproduce_command.empty()) return reproduce_command;
  return "distmetrics run " + runtime::shell_quote(file) + " --filter " + runtime::shell_quote(id, true);
}

nlohmann::json Variant::to_json() const {
  nlohmann::json j = {{"id", id},
                      {"scenario", scenario},
                      {"file", file},
                      {"metric", metric},
                      {"backend", backend},
                      {"launch", runtime::pool_launch_for(backend)},
                      {"world_size", world_size},
                      {"shard", shard},
                      {"placement", placement},
                      {"deadline", deadline_seconds},
                      {"markers", markers},
                      {"skip", skip ? nlohmann::json(skip->text) : nlohmann::json(nullptr)}};
  if (!dtype.empty()) j["dtype"] = dtype;  // only on variants of a scenario that lists input dtypes
  return j;
}

bool Selection::matches(const Variant& v) const {
  auto in = [](const auto& list, const auto& item) {
    return list.empty() || std::find(list.begin(), list.end(), item) != list.end();
  };
  if (!in(backends, v.backend) || !in(world_sizes, v.world_size) || !in(shards, v.shard) || !in(placements, v.placement) ||
      !in(dtypes, v.dtype))
    return false;
  if (filters.empty()) return true;
  return std::any_of(filters.begin(), filters.end(),
                     [&](const std::string& glob) { return fnmatch(glob.c_str(), v.id.c_str(), 0) == 0; });
}

namespace {

// Whether the scenario expands into this combination (a policy or placement meaningless at the
// world size is left out, e.g. empty_rank at 1).
bool expands_into(int world_size, const std::string& shard, const std::string& placement) {
  const auto* policy = find_shard_policy(shard);
  if (policy && world_size < policy->min_world_size) return false;
  const auto* where = find_placement(placement);
  return !(where && world_size < where->min_world_size);
}

// The one variant of `scenario` with these parts, as expand_variants makes it.
Variant make_variant(const Scenario& scenario, const std::string& backend, int ws, const std::string& shard,
                     const std::string& placement, const std::string& dtype, int gpus_available) {
  Variant v;
  v.id = variant_id(scenario.name, backend, ws, shard, placement, dtype);
  v.dtype = dtype;
  v.scenario = scenario.name;
  v.file = scenario.file;
  v.metric = scenario.metric;
  v.backend = backend;
  v.world_size = ws;
  v.shard = shard;
  v.placement = placement;
  v.seed = scenario.data.seed;
  v.deadline_seconds = scenario.deadline_seconds;
  v.markers.push_back(backend);
  if (gpus_needed(placement, backend, ws) > 0) v.markers.push_back("gpu");
  if (scenario.name.rfind("regression/", 0) == 0) v.markers.push_back("regression");
  for (const auto& tag : scenario.tags)  // every tag is a marker ("slow", "multilabel", ...)
    if (std::find(v.markers.begin(), v.markers.end(), tag) == v.markers.end()) v.markers.push_back(tag);
  v.skip = skip_reason(placement, backend, ws, gpus_available);
  if (scenario.names_python())  // it runs only where the command line lets scenarios call Python
    v.reproduce_command = "distmetrics run --allow-python " + runtime::shell_quote(v.file) + " --filter " +
                          runtime::shell_quote(v.id, true);
  return v;
}

const std::vector<std::string>& dtypes_of(const Scenario& scenario) {
  static const std::vector<std::string> as_generated{""};
  return scenario.dtypes.empty() ? as_generated : scenario.dtypes;
}

}  // namespace

std::vector<Variant> expand_variants(const Scenario& scenario, int gpus_available) {
  std::vector<Variant> out;
  for (const auto& backend : scenario.backends)
    for (int ws : scenario.world_sizes)
      for (const auto& shard : scenario.shards)
        for (const auto& placement : scenario.placements)
          if (expands_into(ws, shard, placement))
            for (const auto& dtype : dtypes_of(scenario))
              out.push_back(make_variant(scenario, backend, ws, shard, placement, dtype, gpus_available));
  return out;
}

std::optional<Variant> find_variant(const Scenario& scenario, const std::string& id, int gpus_available) {
  // <scenario>:<backend>-ws<N>-<shard>-<placement>[-<dtype>]: each part is matched against the
  // scenario's own lists, so a name with a '-' in it is no ambiguity.
  const std::string head = scenario.name + ":";
  if (id.compare(0, head.size(), head) != 0) return std::nullopt;
  const std::string rest = id.substr(head.size());
  auto starts = [](const std::string& text, std::size_t at, const std::string& part) {
    return text.compare(at, part.size(), part) == 0;
  };
  for (const auto& backend : scenario.backends) {
    if (!starts(rest, 0, backend + "-ws")) continue;
    for (int ws : scenario.world_sizes) {
      const std::string ws_part = backend + "-ws" + std::to_string(ws) + "-";
      if (!starts(rest, 0, ws_part)) continue;
      for (const auto& shard : scenario.shards) {
        if (!starts(rest, ws_part.size(), shard + "-")) continue;
        const std::size_t at = ws_part.size() + shard.size() + 1;
        for (const auto& placement : scenario.placements) {
          if (!starts(rest, at, placement) || !expands_into(ws, shard, placement)) continue;
          for (const auto& dtype : dtypes_of(scenario))
            if (rest.size() == at + placement.size() + (dtype.empty() ? 0 : dtype.size() + 1) &&
                (dtype.empty() || starts(rest, at + placement.size(), "-" + dtype)))
              return make_variant(scenario, backend, ws, shard, placement, dtype, gpus_available);
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace distmetrics::harness
