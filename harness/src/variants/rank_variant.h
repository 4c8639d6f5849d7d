// A variant as its ranks receive it: the "scenario_variant" job's params, written by
// make_variant_job (engine.h) in the supervisor and read by the task (scenario_task.cpp) on every
// rank. A rank is sent the supervisor's plan and follows it as it is: it never plans.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "distmetrics/harness/data.h"
#include "distmetrics/harness/scenario.h"
#include "distmetrics/harness/script.h"

namespace distmetrics::harness {

// The part of a scenario a rank reads; the rest (its variants, tolerance, golden values, ...)
// stays with the supervisor, which judges.
struct RankScenario {
  std::string metric;
  nlohmann::json metric_params = nlohmann::json::object();
  DataSpec data;            // the rank makes its own rows from it
  std::vector<Step> script;  // the steps' text names where a rank was (a crash report)
  // The properties the scenario checks, as Scenario::checks answered in the supervisor: the rank
  // runs the probes of those that have one.
  std::vector<std::string> checked;
  Expectation expect;

  bool checks(const std::string& property) const;
};
RankScenario rank_scenario_of(const Scenario& scenario);

struct RankVariant {
  RankScenario scenario;
  std::string placement;
  std::string dtype;    // the input dtype ("": the data as generated)
  std::string backend;  // the rank's GPU follows the backend's rule (rank_gpu)
  // VariantPlan::to_json: each rank reads its own part (VariantPlan::rank_from_json). Null when
  // the supervisor could not plan the variant: `plan_error` says why.
  nlohmann::json plan;
  std::string plan_error;

  nlohmann::json to_json() const;
  static RankVariant from_json(const nlohmann::json& j);
};

}  // namespace distmetrics::harness
