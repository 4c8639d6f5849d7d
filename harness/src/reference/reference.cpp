// The single-process reference: the same metric, in this process, with no communicator, on the
// union of what the ranks fed, in global order; and the collectives it issues in each compute
// (the same instance's compute() once more, on a single-process communicator).
#include <ATen/ATen.h>

#include <algorithm>
#include <map>
#include <optional>

#include "distmetrics/harness/engine.h"
#include "distmetrics/harness/metric_catalog.h"
#include "distmetrics/harness/observation.h"
#include "distmetrics/runtime/comm.h"
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

// The collectives `metric` issues in one more compute() on a single-process communicator, after
// its value was taken without one: the metric's own sequence for that compute. nullopt when the
// metric cannot take that communicator (a Python metric needs a torch.distributed group) or the
// traced compute ended otherwise than `value` did (it raised where that did not, or another type).
std::optional<std::vector<TraceEntry>> traced_compute(metrics::Metric& metric, const ComputeResult& value) {
  const auto comm = runtime::make_single_process_communicator();
  std::optional<std::vector<TraceEntry>> collectives;
  try {
    metric.set_communicator(comm.get());
    std::string raised;
    try {
      (void)metric.compute();
    } catch (const std::exception& e) {
      raised = exception_type_name(e);
    }
    if (raised == value.error_type) {
      collectives.emplace();
      for (const auto& record : comm->trace()) {
        TraceEntry entry;
        entry.seq = record.seq;
        entry.op = record.op;
        entry.dtype = record.dtype;
        entry.shape = record.shape;
        collectives->push_back(std::move(entry));
      }
    }
  } catch (const std::exception&) {  // set_communicator refused it: not recorded
  }
  metric.set_communicator(nullptr);  // the communicator goes with this scope
  return collectives;
}

// One compute of the reference: its value (the metric without a communicator, over `batches`)
// and, with `trace`, the collectives the same instance issues in compute() (traced_compute).
struct ReferenceCompute {
  ComputeResult result;
  std::optional<std::vector<TraceEntry>> collectives;
};

ReferenceCompute reference_compute(const Scenario& scenario, const Dataset& data, const std::vector<SampleIndices>& batches,
                                   bool trace) {
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
  ReferenceCompute out;
  try {
    out.result.value = metric->compute().to_json();
  } catch (const std::exception& e) {
    out.result.error_type = exception_type_name(e);
    out.result.error = error_message(e);
  }
  if (trace) out.collectives = traced_compute(*metric, out.result);
  return out;
}

}  // namespace

ComputeResult single_process_result(const Scenario& scenario, const Dataset& data,
                                    const std::vector<SampleIndices>& batches) {
  return reference_compute(scenario, data, batches, false).result;
}

void ReferenceMemo::use(const std::string& key) {
  if (key == data_key) return;
  data_key = key;
  entries.clear();
}

namespace {

// reference_compute, or what the memo kept of the same run (a failure too: it would fail again).
ReferenceCompute remembered_compute(const Scenario& scenario, const Dataset& data, std::vector<SampleIndices> batches,
                                    bool trace, ReferenceMemo* memo) {
  if (!memo) return reference_compute(scenario, data, batches, trace);
  auto key = std::make_pair(std::move(batches), trace);
  auto it = memo->entries.find(key);
  if (it == memo->entries.end()) {
    ReferenceMemo::Entry entry;
    try {
      ReferenceCompute run = reference_compute(scenario, data, key.first, trace);
      entry.result = std::move(run.result);
      entry.collectives = std::move(run.collectives);
    } catch (const ReferenceFailure& e) {
      entry.failure = e.what();
    }
    ++memo->runs;
    it = memo->entries.emplace(std::move(key), std::move(entry)).first;
  } else {
    ++memo->hits;
  }
  if (!it->second.failure.empty()) throw ReferenceFailure(it->second.failure);
  return ReferenceCompute{it->second.result, it->second.collectives};
}

}  // namespace

SingleProcessReference build_reference(const Scenario& scenario, const Dataset& data, const ShardPlan& shards,
                                       const ScriptPlan& script, ReferenceData what, ReferenceMemo* memo) {
  SingleProcessReference ref;
  // The reference implementation's (AsFed) collectives are not the metric's: not recorded.
  const bool trace = what == ReferenceData::Union;
  try {
    std::map<std::vector<std::size_t>, ReferenceCompute> cache;  // computes that saw the same batches
    for (const auto& point : script.computes) {
      auto it = cache.find(point.fed);
      if (it == cache.end())
        it = cache.emplace(point.fed, remembered_compute(scenario, data,
                                                         reference_batches(scenario, shards, point.fed, what == ReferenceData::AsFed),
                                                         trace, memo))
                 .first;
      ref.at_compute.push_back(it->second.result);
      if (trace) ref.collectives_at_compute.push_back(it->second.collectives);
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
      ref.full = fed_all->second.result;
    else
      ref.full = remembered_compute(scenario, data, cut_batches(all, scenario.batch_size), false, memo).result;
    if (scenario.checks("batch_invariant")) {
      for (auto size : scenario.batch_invariant_sizes)
        ref.other_batch_sizes.emplace_back(size, remembered_compute(scenario, data, cut_batches(all, size), false, memo).result);
    }
  } catch (const ReferenceFailure& e) {
    ref.failure = e.what();
  }
  return ref;
}

}  // namespace distmetrics::harness
