#include "distmetrics/harness/variant.h"

#include <fnmatch.h>

#include <algorithm>

#include "distmetrics/harness/placement.h"
#include "distmetrics/harness/shard.h"
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
                      {"backend", backend},
                      {"world_size", world_size},
                      {"shard", shard},
                      {"placement", placement},
                      {"deadline", deadline_seconds},
                      {"markers", markers},
                      {"skip", skip ? nlohmann::json(*skip) : nlohmann::json(nullptr)}};
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

std::vector<Variant> expand_variants(const Scenario& scenario, int gpus_available) {
  std::vector<Variant> out;
  const bool regression = scenario.name.rfind("regression/", 0) == 0;
  for (const auto& backend : scenario.backends) {
    for (int ws : scenario.world_sizes) {
      for (const auto& shard : scenario.shards) {
        const auto* policy = find_shard_policy(shard);
        if (policy && ws < policy->min_world_size) continue;
        for (const auto& placement : scenario.placements) {
          const auto* where = find_placement(placement);
          if (where && ws < where->min_world_size) continue;
          for (const auto& dtype : scenario.dtypes.empty() ? std::vector<std::string>{""} : scenario.dtypes) {
          Variant v;
          v.id = variant_id(scenario.name, backend, ws, shard, placement, dtype);
          v.dtype = dtype;
          v.scenario = scenario.name;
          v.file = scenario.file;
          v.backend = backend;
          v.world_size = ws;
          v.shard = shard;
          v.placement = placement;
          v.seed = scenario.data.seed;
          v.deadline_seconds = scenario.deadline_seconds;
          v.markers.push_back(backend);
          if (gpus_needed(placement, backend, ws) > 0) v.markers.push_back("gpu");
          if (regression) v.markers.push_back("regression");
          for (const auto& tag : scenario.tags)  // every tag is a marker ("slow", "multilabel", ...)
            if (std::find(v.markers.begin(), v.markers.end(), tag) == v.markers.end()) v.markers.push_back(tag);
          v.skip = skip_reason(placement, backend, ws, gpus_available);
          if (scenario.names_python())  // it runs only where the command line lets scenarios call Python
            v.reproduce_command = "distmetrics run --allow-python " + runtime::shell_quote(v.file) + " --filter " +
                                  runtime::shell_quote(v.id, true);
          out.push_back(std::move(v));
          }
        }
      }
    }
  }
  return out;
}

}  // namespace distmetrics::harness
