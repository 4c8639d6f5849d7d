#include "explore_runner.h"

#include <algorithm>
#include <optional>

#include "distmetrics/harness/engine.h"
#include "distmetrics/harness/variant.h"
#include "distmetrics/plugin/conform.h"
#include "distmetrics/runtime/rank_pool.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::app {

struct CaseRunner::State {
  CaseSource source;
  std::optional<plugin::PluginScenario> current;  // conform's form of the case being run
  std::unique_ptr<plugin::RemoteReference> remote;
  std::unique_ptr<harness::Engine> engine;
  harness::EngineOptions engine_options;
  // A few world sizes' pools stay up across cases (each batch of cases runs at one world size).
  std::size_t max_pools = 3;
  std::unique_ptr<harness::LocalPools> pools;
  std::vector<std::string> warm;  // pools that ran a variant since they started, least recent first
  int gpus = runtime::visible_gpu_count();

  // A fresh pool's first variant pays for what its ranks do once (a Python rank's first
  // torch.distributed group: 17 s at world size 4 on a loaded 2-core machine), which a case's
  // deadline must not be charged for: a small case of the same metric runs first, with a long
  // deadline, and its verdict is not used.
  void warm_up(const harness::Scenario& like, const harness::Variant& variant);
};

void CaseRunner::State::warm_up(const harness::Scenario& like, const harness::Variant& variant) {
  const std::string key = variant.backend + ":" + std::to_string(variant.world_size);
  const auto found = std::find(warm.begin(), warm.end(), key);
  if (found != warm.end()) {
    warm.erase(found);
    warm.push_back(key);
    return;
  }
  warm.push_back(key);
  if (warm.size() > max_pools) warm.erase(warm.begin());
  harness::Scenario s = like;
  s.shards = {"even"};
  s.dtypes.clear();
  s.script = {harness::parse_step("update rest"), harness::parse_step("compute")};
  s.data.num_samples = s.data.file.empty() ? 2 * variant.world_size : s.data.num_samples;
  s.batch_size = 2;
  s.deadline_seconds = 180;
  auto variants = harness::expand_variants(s, gpus);
  if (variants.empty() || variants.front().skip) return;
  harness::EngineOptions options;
  options.deadline_seconds = 180;
  options.single_process = engine_options.single_process;
  harness::Engine warm_engine(options);
  try {
    warm_engine.run(s, variants.front(), pools->runner_for(variants.front()));
  } catch (const std::exception&) {
    // The case that follows reports a pool that cannot start.
  }
}

CaseRunner::CaseRunner(const CaseSource& source) : state_(std::make_unique<State>()) {
  auto& s = *state_;
  s.source = source;
  harness::EngineOptions options;
  options.deadline_seconds = source.deadline;
  if (source.plugin) {  // as `distmetrics conform` sets up its engine
    s.remote = std::make_unique<plugin::RemoteReference>(source.deadline);
    s.remote->warm_up();
    options.single_process = [&s](const harness::Scenario& scenario, const harness::Variant& variant, const harness::Dataset&,
                                  const harness::ShardPlan&, const harness::ScriptPlan&) {
      return s.remote->build(scenario, variant);
    };
    options.extra_checks.push_back([&s](const harness::CheckContext& ctx, const harness::Dataset& data,
                                        const harness::ShardPlan& shards, const runtime::Deadline& until) {
      const auto& reference = s.current->reference;
      if (!metrics::MetricRegistry::reference().find(reference.metric)) {
        harness::PropertyResult p;
        p.name = plugin::kAgreesWithReference;
        p.outcome = harness::Outcome::Skip;
        p.message = "agrees_with_reference skipped: distmetrics has no reference implementation of " + reference.metric;
        return p;
      }
      return plugin::check_agrees_with_reference(ctx, reference, data, shards, until);
    });
  }
  s.engine_options = options;
  s.engine = std::make_unique<harness::Engine>(options);
  s.max_pools = source.max_pools;
  s.pools = std::make_unique<harness::LocalPools>(runtime::PoolOptions{}, source.max_pools);
}

CaseRunner::~CaseRunner() { state_->pools->clear(); }

nlohmann::json CaseRunner::run(const harness::Scenario& given) {
  auto& s = *state_;
  const harness::Scenario* scenario = &given;
  if (s.source.plugin) {
    s.current = plugin::adapt_scenario(given, *s.source.plugin);
    scenario = &s.current->scenario;
  }
  auto variants = harness::expand_variants(*scenario, s.gpus);
  harness::Verdict verdict;
  if (variants.empty()) {
    verdict.outcome = harness::Outcome::Error;
    verdict.reason = "the case expands into no variant";
    return verdict.to_json();
  }
  const harness::Variant& variant = variants.front();
  if (variant.skip) return harness::skip_verdict(variant).to_json();
  if (s.current && s.current->cannot_run) {
    harness::Variant skipped = variant;
    skipped.skip = *s.current->cannot_run;
    return harness::skip_verdict(skipped).to_json();
  }
  try {
    s.warm_up(*scenario, variant);
    verdict = s.engine->run(*scenario, variant, s.pools->runner_for(variant));
    // A hang or a crash respawns the pool: its next variant is a fresh pool's first again.
    if (verdict.outcome == harness::Outcome::Hang || verdict.outcome == harness::Outcome::Crash) {
      const std::string key = variant.backend + ":" + std::to_string(variant.world_size);
      s.warm.erase(std::remove(s.warm.begin(), s.warm.end(), key), s.warm.end());
    }
  } catch (const std::exception& e) {  // the pool itself could not start
    verdict.variant = variant;
    verdict.outcome = harness::Outcome::Error;
    verdict.reason = std::string("could not start the rank pool: ") + runtime::first_line(e.what());
  }
  return verdict.to_json();
}

}  // namespace distmetrics::app
