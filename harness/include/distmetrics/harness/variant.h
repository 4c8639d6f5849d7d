// Variants: a scenario expanded over backend x world size x shard policy x placement, each with
// an id made only of [A-Za-z0-9_./:-]:  <scenario>:<backend>-ws<N>-<shard>-<placement>, and
// -<dtype> when the scenario lists input dtypes.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/harness/scenario.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness {

struct Variant {
  std::string id;
  std::string scenario;  // scenario name
  std::string file;      // scenario file path
  std::string metric;    // the scenario's metric, as its file names it
  std::string backend;
  int world_size = 1;
  std::string shard;
  std::string placement;
  std::string dtype;  // the input dtype (input_dtype.h); empty: the data as generated
  std::uint64_t seed = 0;
  double deadline_seconds = 0;       // the scenario's deadline for one variant
  std::vector<std::string> markers;  // backend, "gpu", "regression", "slow"
  std::optional<runtime::Unavailable> skip;  // why it cannot run here
  // The command that reproduces it when not `distmetrics run` (e.g. `distmetrics conform ...`).
  std::string reproduce_command;

  // The short form used as the JUnit test name: "gloo-ws4-uneven-cpu".
  std::string short_id() const;
  // distmetrics run <file> --filter '<id>' (or reproduce_command when set)
  std::string reproduce() const;
  // The `distmetrics list --json` form (docs/cli-contract.md), with "launch": how a local rank
  // pool starts its ranks ("direct", or "mpirun" for a backend only mpirun can start: the
  // backend table's pool_launch).
  nlohmann::json to_json() const;
};

std::string variant_id(const std::string& scenario, const std::string& backend, int world_size,
                       const std::string& shard, const std::string& placement, const std::string& dtype = "");

// What the command line selected; empty lists select everything.
struct Selection {
  std::vector<std::string> backends;
  std::vector<int> world_sizes;
  std::vector<std::string> shards;
  std::vector<std::string> placements;
  std::vector<std::string> dtypes;   // input dtypes; a variant without one matches only an empty list
  std::vector<std::string> filters;  // globs on variant ids, OR-ed

  bool matches(const Variant& variant) const;
};

// Every variant of the scenario (policies meaningless at a world size, e.g. empty_rank at 1,
// are left out), with skip reasons for those this machine cannot run. Order: backend, world
// size, shard, placement, as the scenario lists them.
std::vector<Variant> expand_variants(const Scenario& scenario, int gpus_available);

// The variant of `scenario` whose id is `id`, as expand_variants makes it, without making the
// others (the id's parts are read back against the scenario's lists); nullopt when the scenario
// does not expand into it.
std::optional<Variant> find_variant(const Scenario& scenario, const std::string& id, int gpus_available);

}  // namespace distmetrics::harness
