#include "explore_runner.h"

#include <algorithm>
#include <optional>
#include <set>

#include "distmetrics/harness/explore.h"
#include "distmetrics/harness/session.h"
#include "distmetrics/harness/variant.h"
#include "distmetrics/plugin/conform.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::app {

struct CaseRunner::State {
  CaseSource source;
  std::optional<plugin::PluginScenario> current;  // conform's form of the case being run
  std::unique_ptr<plugin::RemoteReference> remote;
  // The session keeps a few world sizes' pools up across cases (each batch of cases runs at one
  // world size).
  std::unique_ptr<harness::Session> session;
  int gpus = runtime::visible_gpu_count();
};

CaseRunner::CaseRunner(const CaseSource& source) : state_(std::make_unique<State>()) {
  auto& s = *state_;
  s.source = source;
  // No engine-wide deadline: each case's own (explore sets it to --deadline).
  harness::SessionOptions options;
  // A Python source's pools (the ranks' and the helper worker's) import it as they start, as
  // `conform --python`'s do (ConformSource::pool_warm_up, the python/preload task): the start
  // pays for it, not a case's deadline, also after a hang or a crash respawned a pool.
  const auto* python = plugin::python_conform_source();
  if (source.plugin && plugin::is_python(*source.plugin) && python) {
    // Before any pool starts: workers then fork with the source imported (a respawn after a
    // hang costs a fork, not an import of torch per rank); the warm-up finds it loaded.
    if (python->prepare_workers) python->prepare_workers();
    if (python->pool_warm_up) options.pool_warm_up = python->pool_warm_up();
  }
  if (source.plugin) {  // as `distmetrics conform` sets up its engine
    s.remote = std::make_unique<plugin::RemoteReference>(source.deadline);
    s.remote->set_pool_warm_up(options.pool_warm_up);
    s.remote->warm_up();
    options.engine.single_process = [&s](const harness::Scenario& scenario, const harness::Variant& variant,
                                         const harness::Dataset&, const harness::ShardPlan&, const harness::ScriptPlan&) {
      return s.remote->build(scenario, variant);
    };
    options.engine.extra_checks.push_back([&s](const harness::CheckContext& ctx, const harness::Dataset&,
                                               const harness::ShardPlan& shards, const runtime::Deadline& until) {
      const auto& reference = s.current->reference;
      harness::PropertyResult p;
      p.name = plugin::kAgreesWithReference;
      p.outcome = harness::Outcome::Skip;
      // A compute where no rank had a sample: what compute() returns then (raise, 0 or NaN) is a
      // convention the source declares (docs/python.md, "no_data"), which `conform` judges where
      // a scenario expects it; not what explore looks for. Those computes are left out here (the
      // metric's own single process still judges them: equal_to_single, ranks_agree). Explore's
      // false failures: 0-sample cases, and `compute, compute, update, compute` (NaN against
      // the reference implementation's NotComputableError at the first two).
      const std::set<int> without_data = harness::explore::computes_without_data(ctx.plan, shards);
      if (without_data.size() == ctx.plan.computes.size()) {
        p.message = "agrees_with_reference skipped: no rank had a sample at any compute (what compute() returns then "
                    "is the source's declared no-data convention, which conform judges)";
        return p;
      }
      if (!metrics::MetricRegistry::reference().find(reference.metric)) {
        p.message = "agrees_with_reference skipped: distmetrics has no reference implementation of " + reference.metric;
        return p;
      }
      if (without_data.empty()) return plugin::check_agrees_with_reference(ctx, reference, *s.remote, until);
      std::vector<harness::RankObservation> judged = ctx.ranks;
      for (auto& obs : judged)
        obs.computes.erase(std::remove_if(obs.computes.begin(), obs.computes.end(),
                                          [&](const harness::ComputeRecord& c) { return without_data.count(c.index) > 0; }),
                           obs.computes.end());
      const harness::CheckContext judged_ctx{ctx.scenario, ctx.variant, ctx.plan, ctx.single, judged};
      auto result = plugin::check_agrees_with_reference(judged_ctx, reference, *s.remote, until);
      result.message += " (" + std::to_string(without_data.size()) +
                        " compute(s) where no rank had a sample not judged: the source's no-data convention)";
      return result;
    });
  }
  options.max_pools = source.max_pools;
  s.session = std::make_unique<harness::Session>(std::move(options));
}

CaseRunner::~CaseRunner() { state_->session->close(); }

harness::Verdict CaseRunner::run(const harness::Scenario& given) {
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
    return verdict;
  }
  const harness::Variant& variant = variants.front();
  if (variant.skip) return harness::skip_verdict(variant);
  if (s.current && s.current->cannot_run) {
    harness::Variant skipped = variant;
    skipped.skip = *s.current->cannot_run;
    return harness::skip_verdict(skipped);
  }
  return s.session->run(harness::SessionItem{scenario, variant, std::nullopt});
}

}  // namespace distmetrics::app
