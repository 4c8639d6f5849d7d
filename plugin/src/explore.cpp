// explore's cases of a plugin's or a Python source's metric (explore.h).
#include "distmetrics/plugin/explore.h"

#include <optional>

#include "distmetrics/harness/session.h"
#include "distmetrics/plugin/conform.h"
#include "distmetrics/runtime/backends.h"

namespace distmetrics::plugin {

struct ExploreRunner::State {
  const Plugin* source = nullptr;
  std::optional<PluginScenario> current;  // conform's form of the case being run
  std::unique_ptr<ConformChecks> checks;
  std::unique_ptr<harness::Session> session;
};

ExploreRunner::ExploreRunner(const Plugin& source, double deadline, std::size_t max_pools)
    : state_(std::make_unique<State>()) {
  auto& s = *state_;
  s.source = &source;
  // What compute() returns where no rank had a sample is the source's declared no-data
  // convention (docs/python.md), which conform judges where a scenario expects it; explore's
  // cases leave those computes out of agrees_with_reference.
  ConformJudging judging;
  judging.computes_without_data = false;
  s.checks = std::make_unique<ConformChecks>(std::vector<PluginScenario>{}, deadline, judging);
  harness::SessionOptions options;
  // A Python source's pools (the ranks' and the helper worker's) import it as they start, as
  // `conform --python`'s do (ConformSource::pool_warm_up, the python/preload task): the start
  // pays for it, not a case's deadline, also after a hang or a crash respawned a pool.
  const auto* python = python_conform_source();
  if (is_python(source) && python) {
    // Before any pool starts: workers then fork with the source imported (a respawn after a
    // hang costs a fork, not an import of torch per rank); the warm-up finds it loaded.
    if (python->prepare_workers) python->prepare_workers();
    if (python->pool_warm_up) options.pool_warm_up = python->pool_warm_up();
  }
  s.checks->set_pool_warm_up(options.pool_warm_up);
  s.checks->warm_up();
  options.engine = s.checks->engine_options();
  options.engine.deadline_seconds.reset();  // each case's own (explore's --deadline, or three times it)
  options.max_pools = max_pools;
  s.session = std::make_unique<harness::Session>(std::move(options));
}

ExploreRunner::~ExploreRunner() { state_->session->close(); }

harness::Verdict ExploreRunner::run(const harness::Scenario& given) {
  auto& s = *state_;
  s.current = adapt_scenario(given, *s.source);
  s.checks->track(*s.current);
  if (s.current->cannot_run) {
    auto variants = harness::expand_variants(s.current->scenario, runtime::visible_gpu_count());
    if (!variants.empty() && !variants.front().skip) {
      harness::Variant skipped = variants.front();
      skipped.skip = *s.current->cannot_run;
      return harness::skip_verdict(skipped);
    }
  }
  return harness::explore::run_case(*s.session, s.current->scenario);
}

}  // namespace distmetrics::plugin
