// tables_json() (tables.h): every field is read from its table (outcome.h, property.h, shard.h,
// placement.h, runtime/backends.h, the reference metric registry, metric_id.h, report.h's exit
// code of bad input); none is a list written out here.
#include "distmetrics/harness/tables.h"

#include "distmetrics/harness/data.h"
#include "distmetrics/harness/metric_id.h"
#include "distmetrics/harness/outcome.h"
#include "distmetrics/harness/placement.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/harness/report.h"
#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/scenario_fields.h"
#include "distmetrics/harness/script.h"
#include "distmetrics/harness/shard.h"
#include "distmetrics/harness/verdict.h"
#include "distmetrics/metrics/registry.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/launchers.h"

namespace distmetrics::harness {
namespace {

using json = nlohmann::json;  // (each helper named *_json: this file joins a unity batch)

json outcomes_json() {
  json out = json::array();
  for (const auto& kind : outcome_kinds())
    out.push_back({{"name", kind.name},
                   {"symbol", kind.symbol},
                   {"severity", kind.severity},
                   {"exit_code", kind.exit_code},
                   {"passed", outcome_passed(kind.name)},
                   {"junit", kind.junit},
                   {"counted_when_zero", kind.counted_when_zero},
                   {"meaning", kind.meaning}});
  return out;
}

// bad_input, then each outcome's code under its name (pass and skip: 0).
json exit_codes_json() {
  json out = json::object();
  out["bad_input"] = kBadInputExitCode;
  for (const auto& kind : outcome_kinds()) out[kind.name] = kind.exit_code;
  return out;
}

json properties_json() {
  json out = json::array();
  for (const auto& p : property_table())
    out.push_back({{"name", p.name},
                   {"label", p.label},
                   {"listable", p.listable},
                   {"by_default", p.by_default != nullptr},
                   {"checked_anyway", p.checked_anyway != nullptr},
                   {"needs_compute", p.needs_compute ? json(to_string(*p.needs_compute)) : json(nullptr)},
                   {"needs_table", p.needs_table},
                   {"holds_when", p.holds_when}});
  return out;
}

// What a scenario that lists no properties checks when it has the default script, a global
// single process, no golden table and no Python reference: the scenario loader's own rule
// (default_properties) asked of such a scenario.
json default_properties_json() {
  Scenario scenario;
  for (const auto& text : default_script_text(scenario.single_process)) scenario.script.push_back(parse_step(text));
  return default_properties(scenario, roles_in(scenario.script));
}

json backends_json() {
  json out = json::array();
  for (const auto& b : runtime::backends())
    out.push_back({{"name", b.name},
                   {"description", b.description},
                   {"compiled", b.compiled},
                   {"default", b.default_variant},
                   {"comm_devices", b.comm_devices},
                   {"gpu_per_rank", b.gpu_per_rank},
                   {"pool_launch", b.pool_launch},
                   {"peer_launchers", b.peer_launchers}});
  return out;
}

// The launcher table (runtime/launchers.h): a launcher's name, whether every process is a rank,
// and the pool launch a variant's "launch" names (null where a pool cannot start workers that way).
json launchers_json() {
  json out = json::array();
  for (const auto& l : runtime::launchers())
    out.push_back({{"name", l.name},
                   {"description", l.description},
                   {"peers", l.peers},
                   {"through_mpi", l.through_mpi},
                   {"detected_by", l.detected_by},
                   {"pool_launch", l.pool ? json(l.pool->name) : json(nullptr)},
                   {"pool_through_mpirun", l.pool && l.pool->through_mpirun}});
  return out;
}

// Why a property result may be a skip (verdict.h's SkipWhy): its "why" in the JSON report.
json property_skips_json() {
  json out = json::array();
  for (const auto& [why, meaning] : skip_whys()) out.push_back({{"name", to_string(why)}, {"meaning", meaning}});
  return out;
}

json shard_policies_json() {
  json out = json::array();
  for (const auto& p : shard_policies())
    out.push_back({{"name", p.name}, {"description", p.description}, {"min_world_size", p.min_world_size}});
  return out;
}

json placements_json() {
  json out = json::array();
  for (const auto& p : placements())
    out.push_back({{"name", p.name},
                   {"description", p.description},
                   {"min_world_size", p.min_world_size},
                   {"uses_gpu", p.uses_gpu}});
  return out;
}

// The data generators: name and whether their samples are structured (strings, per-image dicts:
// no label to order by, so the skewed policy's key is the sample's index and it splits as even).
json generators_json() {
  json out = json::array();
  for (const auto& g : data_generators())
    out.push_back({{"name", g.name}, {"structured", g.carrier == DataCarrier::Structured}});
  return out;
}

// The reference metrics' parameters: name, default (null: required) and aliases; `distmetrics
// metrics --json` says more of each.
json reference_metrics_json() {
  const auto& registry = metrics::MetricRegistry::reference();
  json out = json::array();
  for (const auto& name : registry.names()) {
    json params = json::array();
    for (const auto& p : registry.find(name)->params)
      params.push_back({{"name", p.name},
                        {"default", p.default_value},
                        {"required", p.required()},
                        {"aliases", metrics::param_aliases(p.name)}});
    out.push_back({{"name", name}, {"params", params}});
  }
  return out;
}

}  // namespace

json tables_json() {
  return {{"format", kTablesFormat},
          {"exit_codes", exit_codes_json()},
          {"outcomes", outcomes_json()},
          {"properties", properties_json()},
          {"default_properties", default_properties_json()},
          // The script a scenario without one runs (script.cpp): what a plan that changes one step
          // of it (the peers' equal-updates plan) starts from.
          {"default_script", default_script_text(Scenario{}.single_process)},
          {"backends", backends_json()},
          {"launchers", launchers_json()},
          {"property_skips", property_skips_json()},
          {"shard_policies", shard_policies_json()},
          {"placements", placements_json()},
          {"generators", generators_json()},
          // The error types an [expect] error may name (scenario.cpp): what the peers' plan for a
          // class whose compute() raises before any update may declare.
          {"expected_errors", expected_error_names()},
          // The fields a scenario file may hold (scenario_fields.h): what the peers' writer checks.
          {"scenario_fields", scenario_fields_json(scenario_fields())},
          {"reference_metrics", reference_metrics_json()},
          // How a report's "source" (and a metric's identity) spells a Python source: the prefix
          // before its spec; a plugin's source is its library's path, with no prefix.
          {"metric_sources", {{"python", MetricSource::python("").text()}}},
          {"conform_nothing_to_check", {kConformNoMetric, kConformNoScenario}}};
}

}  // namespace distmetrics::harness
