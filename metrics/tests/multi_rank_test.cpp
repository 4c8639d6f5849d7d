// Every reference case across ranks, through the runtime (a fresh process group per test):
// each batch is split unevenly over the ranks, rank 0 gets no data at all (for RunningAverage it
// passes empty batches, since every rank must update once per step), and each rank checks that
//   - compute() mid-stream and at the end equals the single-process result on the same batches
//     (the same error, raised on every rank together, where single process raises),
//   - a second compute() agrees exactly and leaves the local state digest unchanged,
//   - updates after a compute() are counted once,
//   - a compute() issues exactly the collectives of the metric's sync plan, the same on every rank.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>

#include "distmetrics/fixtures/rank_test.h"
#include "distmetrics/runtime/comm.h"
#include "distmetrics/metrics/composite.h"
#include "distmetrics/metrics/aggregation.h"
#include "distmetrics/metrics/errors.h"
#include "distmetrics/metrics/registry.h"
#include "distmetrics/metrics/stateful_metric.h"
#include "test_support.h"

namespace distmetrics::metrics {
namespace {

using namespace std::chrono_literals;
using fixtures::RankTestContext;
using testing::values_close;

// Rows [start, start + length) of every field.
Batch slice(const Batch& b, std::int64_t start, std::int64_t length) {
  Batch out;
  if (b.input.defined()) out.input = b.input.narrow(0, start, length);
  if (b.target.defined()) out.target = b.target.narrow(0, start, length);
  if (b.weight.defined()) out.weight = b.weight.narrow(0, start, length);
  return out;
}

// This rank's rows of batch `index`: rank 0 gets none; ranks 1.. get contiguous parts in the
// proportions 1 : 2 : 3 ..., rotated from batch to batch, so shards are uneven and differ.
Batch shard(const Batch& b, std::size_t index, int rank, int world_size) {
  const std::int64_t n = b.size();
  if (rank == 0 || world_size == 1) return world_size == 1 ? b : slice(b, 0, 0);
  const int holders = world_size - 1;
  std::vector<std::int64_t> weights;
  for (int k = 0; k < holders; ++k) weights.push_back(1 + (k + static_cast<int>(index)) % holders);
  std::int64_t total_weight = 0;
  for (auto w : weights) total_weight += w;
  std::int64_t start = 0;
  for (int k = 0; k < holders; ++k) {
    const std::int64_t length = k == holders - 1 ? n - start : n * weights[k] / total_weight;
    if (k == rank - 1) return slice(b, start, length);
    start += length;
  }
  return slice(b, 0, 0);
}

struct Outcome {
  Value value;
  std::string error;  // the error's type name, empty when compute() returned
  std::vector<std::string> collectives;
};

Outcome compute(Metric& metric, const runtime::Communicator* comm) {
  Outcome out;
  const std::size_t before = comm ? comm->trace().size() : 0;
  try {
    out.value = metric.compute();
  } catch (const NotComputableError&) {
    out.error = "NotComputableError";
  } catch (const SyncError&) {
    out.error = "SyncError";
  }
  if (comm) {
    for (std::size_t i = before; i < comm->trace().size(); ++i) {
      out.collectives.push_back(comm->trace()[i].op + " " + comm->trace()[i].dtype);
    }
  }
  return out;
}

// The collectives a successful compute() of `metric` issues.
std::vector<std::string> expected_collectives(Metric& metric, bool any_rows) {
  if (auto* stateful = dynamic_cast<StatefulMetric*>(&metric)) {
    return testing::expected_collectives(stateful->sync_plan(), any_rows);
  }
  std::vector<std::string> out;
  if (auto* composite = dynamic_cast<CompositeMetric*>(&metric)) {
    for (const auto& m : composite->operands()) {
      const auto part = expected_collectives(*m, any_rows);
      out.insert(out.end(), part.begin(), part.end());
    }
  }
  return out;
}

bool any_rows(const std::vector<Batch>& batches, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to; ++i) {
    if (batches[i].size() > 0) return true;
  }
  return false;
}

// True when every rank holds the same numbers (raised or not, collectives issued).
bool ranks_agree(runtime::Communicator& comm, std::int64_t raised, std::int64_t collectives) {
  const at::Tensor mine = at::tensor({raised, -raised, collectives, -collectives}, at::kLong);
  const at::Tensor most = comm.all_reduce_copy(mine, runtime::ReduceOp::Max);
  return most[0].item<std::int64_t>() == -most[1].item<std::int64_t>() &&
         most[2].item<std::int64_t>() == -most[3].item<std::int64_t>();
}

void expect_same(const Outcome& distributed, const Outcome& single, const nlohmann::json& c, const char* when) {
  EXPECT_EQ(distributed.error, single.error) << when;
  if (distributed.error.empty() && single.error.empty()) {
    EXPECT_TRUE(values_close(distributed.value, single.value, c.at("rtol"), c.at("atol"))) << when;
  }
}

// `device`: where this rank's metric keeps its state (the communicator runs on ctx.device()).
void check_case_across_ranks(RankTestContext& ctx, const nlohmann::json& c, c10::Device device = at::kCPU) {
  const auto& registry = MetricRegistry::reference();
  const std::vector<Batch> batches = testing::dataset(c.at("data").get<std::string>());
  const std::size_t half = batches.size() / 2;
  const bool every_step = c.at("metric") == "RunningAverage";

  // Single process, on this rank: the same batches, the same compute points.
  auto alone = registry.make(c.at("metric").get<std::string>(), c.at("params"));
  for (std::size_t i = 0; i < half; ++i) alone->update(batches[i]);
  const Outcome single_mid = compute(*alone, nullptr);
  for (std::size_t i = half; i < batches.size(); ++i) alone->update(batches[i]);
  const Outcome single_end = compute(*alone, nullptr);

  auto metric = registry.make(c.at("metric").get<std::string>(), c.at("params"), device);
  metric->set_communicator(&ctx.comm);
  auto feed = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      const Batch part = shard(batches[i], i, ctx.rank, ctx.world_size);
      if (part.size() > 0 || every_step) metric->update(part);
    }
  };

  feed(0, half);
  const Outcome mid = compute(*metric, &ctx.comm);
  EXPECT_TRUE(ranks_agree(ctx.comm, !mid.error.empty(), mid.collectives.size())) << "mid-stream compute()";
  expect_same(mid, single_mid, c, "mid-stream compute()");
  if (mid.error.empty()) {
    EXPECT_EQ(mid.collectives, expected_collectives(*metric, any_rows(batches, 0, half)));
  }

  feed(half, batches.size());  // after a compute(): each sample must count once
  const std::string digest = metric->state_digest();
  const Outcome first = compute(*metric, &ctx.comm);
  const Outcome second = compute(*metric, &ctx.comm);
  EXPECT_TRUE(ranks_agree(ctx.comm, !first.error.empty(), first.collectives.size())) << "final compute()";
  expect_same(first, single_end, c, "final compute()");
  EXPECT_EQ(metric->state_digest(), digest) << "compute() changed the local state";
  EXPECT_EQ(second.error, first.error);
  if (first.error.empty()) {
    EXPECT_TRUE(values_close(second.value, first.value, 0.0, 0.0)) << "second compute()";
    EXPECT_EQ(first.collectives, expected_collectives(*metric, any_rows(batches, 0, batches.size())));
  }
  EXPECT_EQ(second.collectives, first.collectives);
}

DISTMETRICS_RANK_TEST(MetricsAcrossRanks, EveryReferenceCaseEqualsSingleProcess,
                      DISTMETRICS_WORLD_SIZES(2, 4).backends({"gloo"}).deadline(240s)) {
  for (const auto& c : testing::reference_cases()) {
    SCOPED_TRACE(c.at("id").get<std::string>());
    check_case_across_ranks(ctx, c);
  }
}

// One case per metric on every backend built (gloo, mpi; nccl on a GPU node, where the metric's
// CPU state crosses to the backend's device and back).
DISTMETRICS_RANK_TEST(MetricsAcrossRanks, OneCasePerMetricOnEveryBackend,
                      DISTMETRICS_WORLD_SIZES(1, 2).deadline(120s)) {
  for (const std::string& name : testing::reference_metric_names()) {
    for (const auto& c : testing::reference_cases(name)) {
      if (c.contains("error")) continue;  // the first case with a value
      SCOPED_TRACE(c.at("id").get<std::string>());
      check_case_across_ranks(ctx, c);
      break;
    }
  }
}

// Mixed placements with the collectives on the GPU: even ranks keep their state on the CPU, odd
// ranks on cuda:0; gloo runs on CUDA tensors. Skipped (with the reason) without CUDA.
DISTMETRICS_RANK_TEST(MetricsAcrossRanks, MixedStateDevicesWithCollectivesOnCuda,
                      DISTMETRICS_WORLD_SIZES(2).backends({"gloo"}).comm_device("cuda").deadline(240s)) {
  const c10::Device device = ctx.rank % 2 == 1 ? c10::Device(at::kCUDA, 0) : c10::Device(at::kCPU);
  for (const auto& c : testing::reference_cases()) {
    SCOPED_TRACE(c.at("id").get<std::string>());
    check_case_across_ranks(ctx, c, device);
  }
}

// RunningAverage needs one update() per step on every rank: unequal counts raise SyncError on
// every rank together, naming both counts, before any history collective (no hang).
DISTMETRICS_RANK_TEST(MetricsAcrossRanks, RunningAverageRefusesUnequalUpdateCounts,
                      DISTMETRICS_WORLD_SIZES(4).backends({"gloo"}).deadline(30s)) {
  RunningAverage metric(0.5);
  metric.set_communicator(&ctx.comm);
  Batch b;
  b.input = at::tensor({1.0, 2.0}, at::kDouble);
  for (int i = 0; i < 2 + (ctx.rank == 2 ? 1 : 0); ++i) metric.update(b);
  const std::size_t before = ctx.comm.trace().size();
  try {
    metric.compute();
    ADD_FAILURE() << "expected SyncError";
  } catch (const SyncError& e) {
    EXPECT_STREQ(e.what(),
                 "RunningAverage: the ranks disagree: update() was called 2 times on one rank and 3 times on another; "
                 "every rank must call it once per step (with an empty batch where it has no data for that step)");
  }
  EXPECT_EQ(ctx.comm.trace().size() - before, 1u) << "only the step-count collective";
}

}  // namespace
}  // namespace distmetrics::metrics
