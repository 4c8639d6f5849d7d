// The single-process reference: the same metric, in this process, with no communicator, on the
// union of what the ranks fed, in global order.
#include <ATen/ATen.h>

#include <algorithm>
#include <map>

#include "distmetrics/harness/engine.h"
#include "distmetrics/harness/metric_catalog.h"
#include "distmetrics/harness/observation.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness {
namespace {

using runtime::error_message;
using runtime::exception_type_name;

// The batches the reference feeds for a compute that saw batches [0, fed[r]) of every rank r.
// Each sample once (the union), or as often as the ranks fed it (`as_fed`: what a correct
// metric on those shards counts, duplicates of a padding sampler included). Global order.
std::vector<SampleIndices> reference_batches(const Scenario& scenario, const ShardPlan& shards,
                                             const std::vector<std::size_t>& fed, bool as_fed) {
  auto finish = [as_fed](SampleIndices samples) {
    std::sort(samples.begin(), samples.end());
    if (!as_fed) samples.erase(std::unique(samples.begin(), samples.end()), samples.end());
    return samples;
  };
  if (scenario.single_process == "per_step") {
    // Its t-th batch is the union of the ranks' t-th batches.
    std::size_t steps = 0;
    for (auto f : fed) steps = std::max(steps, f);
    std::vector<SampleIndices> out;
    for (std::size_t t = 0; t < steps; ++t) {
      SampleIndices batch;
      for (std::size_t r = 0; r < fed.size(); ++r)
        if (t < fed[r]) batch.insert(batch.end(), shards.ranks[r][t].begin(), shards.ranks[r][t].end());
      out.push_back(finish(std::move(batch)));
    }
    return out;
  }
  SampleIndices samples;
  for (std::size_t r = 0; r < fed.size(); ++r)
    for (std::size_t b = 0; b < fed[r]; ++b) samples.insert(samples.end(), shards.ranks[r][b].begin(), shards.ranks[r][b].end());
  return cut_batches(finish(std::move(samples)), scenario.batch_size);
}

struct ReferenceFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

ComputeResult single_process_result(const Scenario& scenario, const Dataset& data,
                                    const std::vector<SampleIndices>& batches) {
  const auto* registry = MetricCatalog::instance().registry_for(scenario.metric);
  if (!registry) throw ReferenceFailure("metric '" + scenario.metric + "' is not registered in this process");
  std::unique_ptr<metrics::Metric> metric;
  try {
    metric = registry->make(scenario.metric, scenario.metric_params, c10::Device(c10::kCPU));
  } catch (const std::exception& e) {
    throw ReferenceFailure("building " + scenario.metric + " raised " + exception_type_name(e) + ": " + error_message(e));
  }
  for (std::size_t b = 0; b < batches.size(); ++b) {
    try {
      metric->update(data.rows(batches[b]));
    } catch (const std::exception& e) {
      throw ReferenceFailure("update " + std::to_string(b + 1) + " raised " + exception_type_name(e) + ": " +
                             error_message(e));
    }
  }
  ComputeResult result;
  try {
    result.value = metric->compute().to_json();
  } catch (const std::exception& e) {
    result.error_type = exception_type_name(e);
    result.error = error_message(e);
  }
  return result;
}

SingleProcessReference build_reference(const Scenario& scenario, const Dataset& data, const ShardPlan& shards,
                                       const ScriptPlan& script, ReferenceData what) {
  SingleProcessReference ref;
  try {
    std::map<std::vector<std::size_t>, ComputeResult> cache;  // computes that saw the same batches
    for (const auto& point : script.computes) {
      auto it = cache.find(point.fed);
      if (it == cache.end())
        it = cache.emplace(point.fed, single_process_result(scenario, data, reference_batches(scenario, shards, point.fed, what == ReferenceData::AsFed))).first;
      ref.at_compute.push_back(it->second);
    }
    SampleIndices all(static_cast<std::size_t>(data.size()));
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
    // A global-order compute after every batch of every rank fed each sample once, in batches of
    // batch_size: the same batches as the full reference, whose result it already is (one pass
    // less over large data).
    std::vector<std::size_t> every_batch;
    for (int r = 0; r < shards.world_size; ++r) every_batch.push_back(shards.batches_of(r));
    const auto fed_all = cache.find(every_batch);
    if (fed_all != cache.end() && scenario.single_process != "per_step" && what != ReferenceData::AsFed)
      ref.full = fed_all->second;
    else
      ref.full = single_process_result(scenario, data, cut_batches(all, scenario.batch_size));
    if (scenario.checks("batch_invariant")) {
      for (auto size : scenario.batch_invariant_sizes)
        ref.other_batch_sizes.emplace_back(size, single_process_result(scenario, data, cut_batches(all, size)));
    }
  } catch (const ReferenceFailure& e) {
    ref.failure = e.what();
  }
  return ref;
}

}  // namespace distmetrics::harness
