#include "explore_runner.h"

#include <algorithm>
#include <optional>

#include "distmetrics/harness/session.h"
#include "distmetrics/harness/variant.h"
#include "distmetrics/plugin/conform.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::app {

struct CaseRunner::State {
  CaseSource source;
  std::optional<plugin::PluginScenario> current;  // conform's form of the case being run
  bool warming = false;                           // the run under way is a fresh pool's warm-up
  std::unique_ptr<plugin::RemoteReference> remote;
  // The session keeps a few world sizes' pools up across cases (each batch of cases runs at one
  // world size); explore adds only the warm-up below.
  std::unique_ptr<harness::Session> session;
  std::size_t max_pools = 3;
  std::vector<std::string> warm;  // pools that ran a variant since they started, least recent first
  int gpus = runtime::visible_gpu_count();

  // A fresh pool's first variant pays for what its ranks do once (a Python rank's first
  // torch.distributed group: 17 s at world size 4 on a loaded 2-core machine), which a case's
  // deadline must not be charged for: a small case of the same metric runs first, with a long
  // deadline (at most `seconds_left`, the budget's), and its verdict is not used. False when it
  // was cut at the budget: the case is then not run (a cold pool would charge it the start).
  bool warm_up(const harness::Scenario& like, const harness::Variant& variant, double seconds_left);
};

bool CaseRunner::State::warm_up(const harness::Scenario& like, const harness::Variant& variant, double seconds_left) {
  const std::string key = variant.backend + ":" + std::to_string(variant.world_size);
  const auto found = std::find(warm.begin(), warm.end(), key);
  if (found != warm.end()) {
    warm.erase(found);
    warm.push_back(key);
    return true;
  }
  warm.push_back(key);
  if (warm.size() > max_pools) warm.erase(warm.begin());
  harness::Scenario s = like;
  s.shards = {"even"};
  s.dtypes.clear();
  s.script = {harness::parse_step("update rest"), harness::parse_step("compute")};
  s.data.num_samples = s.data.file.empty() ? 2 * variant.world_size : s.data.num_samples;
  s.batch_size = 2;
  constexpr double kWarmUpDeadline = 180;
  s.deadline_seconds = std::clamp(seconds_left, 1.0, kWarmUpDeadline);
  auto variants = harness::expand_variants(s, gpus);
  if (variants.empty() || variants.front().skip) return true;
  warming = true;
  // A pool that cannot start: the case says so.
  const auto verdict = session->run(harness::SessionItem{&s, variants.front(), std::nullopt});
  warming = false;
  if (verdict.outcome != harness::Outcome::Hang && verdict.outcome != harness::Outcome::Crash) return true;
  warm.erase(std::remove(warm.begin(), warm.end(), key), warm.end());  // respawned
  return s.deadline_seconds >= kWarmUpDeadline;  // a metric that hangs even so: the case shows it
}

CaseRunner::CaseRunner(const CaseSource& source) : state_(std::make_unique<State>()) {
  auto& s = *state_;
  s.source = source;
  // No engine-wide deadline: each case's own (explore sets it to --deadline), and the warm-up's.
  harness::SessionOptions options;
  if (source.plugin) {  // as `distmetrics conform` sets up its engine
    s.remote = std::make_unique<plugin::RemoteReference>(source.deadline);
    s.remote->warm_up();
    options.engine.single_process = [&s](const harness::Scenario& scenario, const harness::Variant& variant,
                                         const harness::Dataset&, const harness::ShardPlan&, const harness::ScriptPlan&) {
      return s.remote->build(scenario, variant);
    };
    options.engine.extra_checks.push_back([&s](const harness::CheckContext& ctx, const harness::Dataset& data,
                                               const harness::ShardPlan& shards, const runtime::Deadline& until) {
      const auto& reference = s.current->reference;
      harness::PropertyResult p;
      p.name = plugin::kAgreesWithReference;
      p.outcome = harness::Outcome::Skip;
      if (s.warming) {
        p.message = "agrees_with_reference skipped: a rank pool's warm-up";
        return p;
      }
      // No rank had a sample at any compute: what compute() returns then (raise, 0 or NaN) is a
      // convention the source declares (docs/python.md, "no_data"), which `conform` judges where
      // a scenario expects it; not what explore looks for. The metric's own single process still
      // judges it (equal_to_single, ranks_agree). Explore's false failures on 0-sample cases.
      bool any_data = false;
      for (const auto& point : ctx.plan.computes)
        for (std::size_t r = 0; r < point.fed.size() && r < shards.ranks.size(); ++r)
          for (std::size_t b = 0; b < point.fed[r] && b < shards.ranks[r].size(); ++b)
            any_data = any_data || !shards.ranks[r][b].empty();
      if (!any_data) {
        p.message = "agrees_with_reference skipped: no rank had a sample at any compute (what compute() returns then "
                    "is the source's declared no-data convention, which conform judges)";
        return p;
      }
      if (!metrics::MetricRegistry::reference().find(reference.metric)) {
        p.message = "agrees_with_reference skipped: distmetrics has no reference implementation of " + reference.metric;
        return p;
      }
      return plugin::check_agrees_with_reference(ctx, reference, data, shards, until);
    });
  }
  s.max_pools = source.max_pools;
  options.max_pools = source.max_pools;
  s.session = std::make_unique<harness::Session>(std::move(options));
}

CaseRunner::~CaseRunner() { state_->session->close(); }

harness::Verdict CaseRunner::run(const harness::Scenario& given, double seconds_left) {
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
  if (!s.warm_up(*scenario, variant, seconds_left)) {
    harness::Variant skipped = variant;
    skipped.skip = "not run: a fresh rank pool's warm-up did not finish within what was left of the budget";
    return harness::skip_verdict(skipped);
  }
  verdict = s.session->run(harness::SessionItem{scenario, variant, std::nullopt});
  // A hang or a crash respawns the pool: its next variant is a fresh pool's first again.
  if (verdict.outcome == harness::Outcome::Hang || verdict.outcome == harness::Outcome::Crash) {
    const std::string key = variant.backend + ":" + std::to_string(variant.world_size);
    s.warm.erase(std::remove(s.warm.begin(), s.warm.end(), key), s.warm.end());
  }
  return verdict;
}

}  // namespace distmetrics::app
