// A variant as its ranks receive it (rank_variant.h): what they read of the scenario, and its JSON.
#include "rank_variant.h"

#include <algorithm>

#include "distmetrics/harness/property.h"

namespace distmetrics::harness {
namespace {

using nlohmann::json;

json expectation_to_json(const Expectation& expect) {
  return {{"error", expect.error},
          {"compute", expect.compute},
          {"fail", expect.fail},
          {"reason", expect.reason},
          {"no_data_value", expect.no_data_value}};
}

Expectation expectation_from_json(const json& j) {
  Expectation expect;
  expect.error = j.at("error");
  expect.compute = j.at("compute");
  expect.fail = j.at("fail").get<std::vector<std::string>>();
  expect.reason = j.at("reason");
  expect.no_data_value = j.at("no_data_value");
  return expect;
}

}  // namespace

bool RankScenario::checks(const std::string& property) const {
  return std::find(checked.begin(), checked.end(), property) != checked.end();
}

RankScenario rank_scenario_of(const Scenario& scenario) {
  RankScenario rank;
  rank.metric = scenario.metric;
  rank.metric_params = scenario.metric_params;
  rank.data = scenario.data;
  rank.script = scenario.script;
  for (const auto& property : property_table())
    if (scenario.checks(property.name)) rank.checked.push_back(property.name);
  rank.expect = scenario.expect;
  return rank;
}

json RankVariant::to_json() const {
  json script = json::array();
  for (const auto& step : scenario.script) script.push_back(step.text);
  return {{"scenario",
           {{"metric", scenario.metric},
            {"metric_params", scenario.metric_params},
            {"data", scenario.data.to_json()},
            {"script", std::move(script)},
            {"checked", scenario.checked},
            {"expect", expectation_to_json(scenario.expect)}}},
          {"placement", placement},
          {"dtype", dtype},
          {"backend", backend},
          {"plan", plan},
          {"plan_error", plan_error}};
}

RankVariant RankVariant::from_json(const json& j) {
  RankVariant v;
  const json& s = j.at("scenario");
  v.scenario.metric = s.at("metric");
  v.scenario.metric_params = s.at("metric_params");
  v.scenario.data = DataSpec::from_json(s.at("data"));
  for (const auto& text : s.at("script")) v.scenario.script.push_back(parse_step(text.get<std::string>()));
  v.scenario.checked = s.at("checked").get<std::vector<std::string>>();
  v.scenario.expect = expectation_from_json(s.at("expect"));
  v.placement = j.at("placement");
  v.dtype = j.at("dtype");
  v.backend = j.at("backend");
  v.plan = j.at("plan");
  v.plan_error = j.at("plan_error");
  return v;
}

}  // namespace distmetrics::harness
