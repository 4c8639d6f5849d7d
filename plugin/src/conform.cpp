// What `distmetrics conform` adds to a variant (conform.h): the scenario adapted to the plugin's
// metric, its reproduce command, the single-process reference on a helper worker and
// agrees_with_reference. The command itself is the CLI's (app/src/conform_command.cpp).
#include <algorithm>
#include <map>
#include <set>
#include <ostream>
#include <sstream>

#include "distmetrics/runtime/text.h"
#include "distmetrics/plugin/catalog.h"
#include "distmetrics/plugin/conform.h"
#include "distmetrics/harness/explore.h"
#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/harness/metric_id.h"
#include "distmetrics/harness/number_text.h"
#include "distmetrics/harness/tables.h"

namespace distmetrics::plugin {
namespace {

using harness::Outcome;
using runtime::shell_quote;
using nlohmann::json;

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

// The plugin's metrics to check: all, or those named by --metric (each must exist).
bool select_metrics(const Plugin& plugin, const std::vector<std::string>& wanted, std::vector<std::string>& metrics,
                    std::ostream& err) {
  const auto provided = plugin.metric_names();
  if (wanted.empty()) {
    metrics = provided;
    return true;
  }
  bool ok = true;
  for (const auto& name : wanted) {
    if (contains(provided, name)) {
      if (!contains(metrics, name)) metrics.push_back(name);
      continue;
    }
    err << "distmetrics conform: --metric: plugin " << plugin.name << " " << harness::kConformNoMetric << " '" << name
        << "'"
        << runtime::did_you_mean(name, provided) << " (it provides " << runtime::quoted_list(provided) << ")\n";
    ok = false;
  }
  return ok;
}

void apply_declared_conventions(PluginScenario& ps, const json& conventions) {
  if (!conventions.is_object()) return;
  if (ps.scenario.expect.error == "NotComputableError") {
    const std::string value = conventions.value("no_data", std::string());
    if (value == "zero" || value == "nan") ps.scenario.expect.no_data_value = value;
  }
  if (conventions.value("precision", std::string()) == "float32") {
    if (const auto* f32 = harness::find_input_dtype("float32")) {
      ps.scenario = harness::judged_for_input_dtype(ps.scenario, "float32");  // the tolerance; golden's below
      if (ps.scenario.golden) {
        ps.scenario.golden->rtol = std::max(ps.scenario.golden->rtol, f32->rtol);
        ps.scenario.golden->atol = std::max(ps.scenario.golden->atol, f32->atol);
      }
    }
  }
}

PluginScenario adapt_scenario(const harness::Scenario& scenario, const Plugin& plugin, const std::string& registered) {
  // The plugin's metric of the scenario's name, or one registered for it as "Name[variant]".
  const std::string name = registered.empty() ? scenario.metric : registered;
  PluginScenario out;
  out.scenario = scenario;
  out.reference = scenario;
  out.metric = name;
  out.scenario.metric = harness::MetricId{name, harness::MetricSource::parse(plugin.path)}.qualified();
  const auto* spec = plugin.registry.find(name);
  if (!spec) {
    out.cannot_run = runtime::Unavailable("plugin " + plugin.name + " has no metric " + name);
    return out;
  }
  // The scenario's parameters were resolved by the reference metric (defaults filled in). The
  // plugin's metric gets those it declares; one it does not declare may be left out only when
  // the scenario leaves it at the reference's default.
  const auto* reference = metrics::MetricRegistry::reference().find(scenario.metric);
  json params = json::object();
  for (const auto& [key, value] : scenario.metric_params.items()) {
    // A plain reference for the lambda: clang before 16 cannot capture a structured binding.
    const std::string& wanted = key;
    const bool declared = std::any_of(spec->params.begin(), spec->params.end(), [&](const auto& p) { return p.name == wanted; });
    if (declared) {
      params[key] = value;
      continue;
    }
    const metrics::ParamSpec* ref_param = nullptr;
    if (reference)
      for (const auto& p : reference->params)
        if (p.name == key) ref_param = &p;
    if (ref_param && ref_param->default_value == value) continue;
    out.cannot_run = runtime::Unavailable("plugin " + plugin.name + "'s " + name + " takes no parameter '" + key + "'",
                                          ", which this scenario sets to " + value.dump());
    return out;
  }
  try {
    out.scenario.metric_params = plugin.registry.resolve_params(name, params);
  } catch (const std::exception& e) {
    out.cannot_run = runtime::Unavailable("plugin " + plugin.name + "'s " + name + " does not take this scenario's parameters",
                                          ": " + std::string(e.what()));
  }
  return out;
}

namespace {
std::optional<ConformSource>& python_source() {
  static std::optional<ConformSource> source;
  return source;
}
}  // namespace

bool is_python(const Plugin& plugin) { return harness::MetricSource::parse(plugin.path).is_python(); }

void register_python_conform_source(ConformSource source) { python_source() = std::move(source); }
const ConformSource* python_conform_source() { return python_source() ? &*python_source() : nullptr; }

std::string conform_reproduce_command(const Plugin& plugin, const std::string& metric, const harness::Variant& variant,
                                      std::optional<double> deadline, std::optional<double> rank_memory_gib) {
  std::string command = "distmetrics conform " + harness::MetricSource::parse(plugin.path).option() + " --metric " +
                        shell_quote(metric) +
                        " " + shell_quote(variant.file) + " --filter " + shell_quote(variant.id, true);
  if (deadline) command += " --deadline " + harness::number_text(*deadline);
  if (rank_memory_gib) command += " --rank-memory " + harness::number_text(*rank_memory_gib);
  return command;
}


ConformChecks::ConformChecks(const std::vector<PluginScenario>& scenarios, std::optional<double> deadline_seconds,
                             ConformJudging judging)
    : deadline_seconds_(deadline_seconds), judging_(judging), remote_(deadline_seconds) {
  // By scenario and qualified metric: each source runs the same scenario under its own name.
  for (const auto& ps : scenarios) track(ps);
}

void ConformChecks::track(const PluginScenario& ps) { by_name_[{ps.scenario.name, ps.scenario.metric}] = &ps; }

void ConformChecks::warm_up() { remote_.warm_up(); }

harness::EngineOptions ConformChecks::engine_options() {
  harness::EngineOptions options;
  options.deadline_seconds = deadline_seconds_;
  options.single_process = [this](const harness::Scenario& scenario, const harness::Variant& variant,
                                  const harness::Dataset&, const harness::VariantPlan& plan) {
    return remote_.build(scenario, variant, plan);
  };
  options.extra_checks.push_back([this](const harness::CheckContext& ctx, const harness::Dataset&,
                                        const harness::ShardPlan& shards, const runtime::Deadline& until) {
    return agrees_with_reference(ctx, shards, until);
  });
  return options;
}

harness::PropertyResult ConformChecks::agrees_with_reference(const harness::CheckContext& ctx,
                                                             const harness::ShardPlan& shards,
                                                             const runtime::Deadline& until) {
  const auto& reference = by_name_.at({ctx.scenario.name, ctx.scenario.metric})->reference;
  harness::PropertyResult p;
  p.name = kAgreesWithReference;
  p.outcome = Outcome::Skip;
  if (ctx.scenario.reference) return p;  // the scenario's own [reference] judges agrees_with_reference
  std::set<int> without_data;
  if (!judging_.computes_without_data) {
    without_data = harness::explore::computes_without_data(ctx.plan, shards);
    if (without_data.size() == ctx.plan.computes.size()) {
      p.message = "agrees_with_reference skipped: no rank had a sample at any compute (what compute() returns then "
                  "is the source's declared no-data convention, which conform judges)";
      return p;
    }
  }
  if (!metrics::MetricRegistry::reference().find(reference.metric)) {
    p.message = "agrees_with_reference skipped: distmetrics has no reference implementation of " + reference.metric;
    return p;
  }
  if (without_data.empty()) return check_agrees_with_reference(ctx, reference, shards, remote_, until);
  std::vector<harness::RankObservation> judged = ctx.ranks;
  for (auto& obs : judged)
    obs.computes.erase(std::remove_if(obs.computes.begin(), obs.computes.end(),
                                      [&](const harness::ComputeRecord& c) { return without_data.count(c.index) > 0; }),
                       obs.computes.end());
  const harness::CheckContext judged_ctx{ctx.scenario, ctx.variant, ctx.plan, ctx.single, judged};
  auto result = check_agrees_with_reference(judged_ctx, reference, shards, remote_, until);
  // After the message's last line (on a failure, its reproduce line).
  (result.variant_lines.empty() ? result.message : result.variant_lines) +=
      " (" + std::to_string(without_data.size()) +
      " compute(s) where no rank had a sample not judged: the source's no-data convention)";
  return result;
}

void register_reference_task();   // conform_reference.cpp

void register_plugin_support() {
  static const bool registered = [] {
    install_plugin_resolver();
    register_reference_task();
    return true;
  }();
  (void)registered;
}

}  // namespace distmetrics::plugin

