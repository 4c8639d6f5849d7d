// A variant that died (hang, crash, error) keeps the verdicts of the properties whose evidence
// lies in the script steps every rank completed before (internal/judging.h,
// keep_verdicts_before_death). What a rank completed comes from its observation (a rank that
// finished, or stopped at the metric's error) or, for one that did not finish, from the records
// its task sent step by step (runtime::post_task_record; observation.h). A property whose
// evidence needs a step not every rank completed is "not judged", with why: never a pass.
#include <algorithm>

#include "../properties/checking.h"
#include "distmetrics/harness/internal/judging.h"
#include "distmetrics/harness/property.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness::judging {
namespace {

// What every rank completed: each rank's observation cut to the steps all of them completed.
struct Reached {
  std::vector<RankObservation> observations;  // by rank
  int steps = 0;                               // script steps 0 .. steps-1, completed by every rank
  std::string missing;                         // why a rank's steps are not known, when one's are not
};

// The steps one rank completed, and what it saw in them.
int steps_of(const RankRun& r, int script_steps, RankObservation& obs, std::string& missing) {
  if (r.observation) {
    obs = *r.observation;
    return obs.error ? std::max(0, obs.error->step) : script_steps;
  }
  try {
    if (auto partial = observation_from_records(r.outcome->records)) {
      obs = std::move(partial->observation);
      return partial->steps_done;
    }
  } catch (const std::exception& e) {
    missing = "rank " + std::to_string(r.rank) + "'s records of its steps do not read (" + runtime::first_line(e.what()) + ")";
    return 0;
  }
  missing = "rank " + std::to_string(r.rank) + " sent no record of its steps before it stopped (it stopped before its " +
            "first, or its launch mode carries none)";
  return 0;
}

Reached reached_by_every_rank(const Judging& j) {
  Reached out;
  out.steps = static_cast<int>(j.plan->script.steps.size());
  for (const auto& r : j.ranks) {
    RankObservation obs;
    std::string missing;
    out.steps = std::min(out.steps, steps_of(r, out.steps, obs, missing));
    if (out.missing.empty()) out.missing = missing;
    obs.rank = r.rank;
    out.observations.push_back(std::move(obs));
  }
  for (auto& obs : out.observations) {
    obs.error.reset();  // a rank's own stop is the verdict's; here only the steps before it count
    auto& c = obs.computes;
    c.erase(std::remove_if(c.begin(), c.end(), [&](const ComputeRecord& r) { return r.step >= out.steps; }), c.end());
    if (obs.empty_rejected && obs.empty_rejected->step >= out.steps) obs.empty_rejected.reset();
  }
  return out;
}

std::string step_text(const Scenario& scenario, int step) {
  return "script step " + std::to_string(step + 1) + " ('" + scenario.script.at(static_cast<std::size_t>(step)).text + "')";
}

// "script steps 1-3 ('update 50%' .. 'compute')"
std::string steps_text(const Scenario& scenario, int steps) {
  if (steps == 1) return step_text(scenario, 0);
  return "script steps 1-" + std::to_string(steps) + " ('" + scenario.script.front().text + "' .. '" +
         scenario.script.at(static_cast<std::size_t>(steps - 1)).text + "')";
}

PropertyResult not_judged(const std::string& name, const std::string& why) {
  PropertyResult p = checking::skipped(name, why);
  p.judged_before_death = "not judged";
  return p;
}

// Every property the scenario checks, not judged for `why`.
std::vector<PropertyResult> none_judged(const Judging& j, const std::string& why) {
  std::vector<PropertyResult> out;
  for (const auto& p : property_table())
    if (p.check && j.scenario.checks(p.name)) out.push_back(not_judged(p.name, why));
  return out;
}

// Whether `result` (judged on the steps reached) keeps its verdict; `full`: the same property
// judged on the whole plan, which tells a property with nothing to judge in this script (its own
// skip, kept as it is) from one whose computes were not reached.
bool keeps_verdict(const PropertyResult& result, const PropertyResult& full, const CheckContext& whole, int steps) {
  const Property* property = find_property(result.name);
  if (property && property->last_evidence_step) return property->last_evidence_step(whole) < steps;
  return result.outcome != Outcome::Skip || full.outcome == Outcome::Skip;
}

}  // namespace

void keep_verdicts_before_death(Judging& j) {
  if (!j.plan) return;
  Reached reached = reached_by_every_rank(j);
  const int total = static_cast<int>(j.plan->script.steps.size());
  std::string died = "the variant's outcome is " + std::string(to_string(j.verdict.outcome));
  // Where the ranks' collectives parted (a desync), what the ranks computed from there on paired
  // collectives of different steps: no evidence, even on a rank that completed the step.
  const int parted = j.verdict.deviation ? j.verdict.deviation->script_step - 1 : total;
  if (parted >= 0 && parted < reached.steps) {
    reached.steps = parted;
    for (auto& obs : reached.observations) {
      auto& c = obs.computes;
      c.erase(std::remove_if(c.begin(), c.end(), [&](const ComputeRecord& r) { return r.step >= parted; }), c.end());
      if (obs.empty_rejected && obs.empty_rejected->step >= parted) obs.empty_rejected.reset();
    }
    died += ", and the ranks' collectives parted at " + step_text(j.scenario, parted);
  } else if (reached.steps < total) {
    died += ", and not every rank completed " + step_text(j.scenario, reached.steps);
  }
  auto keep = [&](std::vector<PropertyResult> results) {
    for (auto& p : results) j.verdict.properties.push_back(std::move(p));
  };
  if (reached.steps == 0) {
    keep(none_judged(j, (reached.missing.empty() ? std::string("no rank completed a script step") : reached.missing) +
                            "; " + died));
    return;
  }
  const ReferenceBuilt& built = j.reference();
  if (built.timed_out || !built.single.failure.empty()) {
    keep(none_judged(j, "the single-process reference " +
                            (built.timed_out ? "did not finish within " + built.left
                                             : "failed: " + runtime::first_line(built.single.failure)) + "; " + died));
    return;
  }
  ScriptPlan cut = j.plan->script;
  cut.computes.erase(std::remove_if(cut.computes.begin(), cut.computes.end(),
                                    [&](const ComputePoint& c) { return c.step >= reached.steps; }),
                     cut.computes.end());
  SingleProcessReference single = built.single;
  single.at_compute.resize(std::min(single.at_compute.size(), cut.computes.size()));
  const CheckContext reached_ctx{j.scenario, j.variant, cut, single, reached.observations};
  const CheckContext whole{j.scenario, j.variant, j.plan->script, built.single, reached.observations};
  auto results = check_properties(reached_ctx);
  const auto full = check_properties(whole);
  const std::string judged_on = "judged on " + steps_text(j.scenario, reached.steps) + ", which every rank completed";
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto& p = results[i];
    if (!keeps_verdict(p, full.at(i), whole, reached.steps)) {
      p = not_judged(p.name, "its evidence lies in script steps not every rank completed; " + died);
    } else if (p.outcome != Outcome::Skip || full.at(i).outcome != Outcome::Skip) {
      const Property* property = find_property(p.name);
      const bool single_alone = property && property->last_evidence_step && property->last_evidence_step(whole) < 0;
      p.judged_before_death = single_alone ? "judged on the single process alone (no rank's step)" : judged_on;
    }
  }
  keep(std::move(results));
}

}  // namespace distmetrics::harness::judging
