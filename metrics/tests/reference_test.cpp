// Every reference case (tools/reference/generate_reference.py: scikit-learn and numpy on the same
// inputs) built through the registry, single process: without a communicator, and with a
// world-size-1 communicator, which must give the identical value, a repeatable compute() that
// leaves the local state alone, and exactly the collectives the metric's sync plan lists.
#include <gtest/gtest.h>

#include <ATen/Context.h>

#include <memory>

#include "distmetrics/runtime/comm.h"
#include "distmetrics/metrics/errors.h"
#include "distmetrics/metrics/registry.h"
#include "distmetrics/metrics/stateful_metric.h"
#include "test_support.h"

namespace distmetrics::metrics {
namespace {

using testing::dataset;
using testing::reference_cases;
using testing::values_close;

std::unique_ptr<Metric> build(const nlohmann::json& c) {
  return MetricRegistry::reference().make(c.at("metric").get<std::string>(), c.at("params"));
}

void feed(Metric& metric, const nlohmann::json& c) {
  for (const Batch& batch : dataset(c.at("data").get<std::string>())) metric.update(batch);
}

// compute(), or the name of the error it raised.
std::string compute_or_error(Metric& metric, Value& out) {
  try {
    out = metric.compute();
    return "";
  } catch (const NotComputableError&) {
    return "NotComputableError";
  } catch (const SyncError&) {
    return "SyncError";
  } catch (const InputError&) {
    return "InputError";
  }
}

std::vector<std::string> trace_ops(const runtime::Communicator& comm, std::size_t from) {
  std::vector<std::string> out;
  for (std::size_t i = from; i < comm.trace().size(); ++i) {
    out.push_back(comm.trace()[i].op + " " + comm.trace()[i].dtype);
  }
  return out;
}

// Checks one case single process: against the reference value, then with a world-size-1
// communicator (identical value, idempotent, local state untouched, collectives = sync plan).
void check_case(const nlohmann::json& c) {
  auto alone = build(c);
  feed(*alone, c);
  Value a;
  const std::string error_alone = compute_or_error(*alone, a);
  if (c.contains("error")) {
    EXPECT_EQ(error_alone, c.at("error").get<std::string>());
  } else {
    ASSERT_EQ(error_alone, "");
    EXPECT_TRUE(values_close(a, Value::from_json(c.at("expected")), c.at("rtol"), c.at("atol")));
  }

  auto synced = build(c);
  auto comm = runtime::make_single_process_communicator();
  synced->set_communicator(comm.get());
  feed(*synced, c);
  const std::string digest = synced->state_digest();
  EXPECT_EQ(digest, alone->state_digest());
  Value first, second;
  const std::string error_first = compute_or_error(*synced, first);
  const auto ops = trace_ops(*comm, 0);
  const std::string error_second = compute_or_error(*synced, second);
  EXPECT_EQ(error_first, error_alone);
  EXPECT_EQ(error_second, error_alone);
  EXPECT_EQ(synced->state_digest(), digest) << "compute() changed the local state";
  if (error_alone.empty()) {
    EXPECT_TRUE(values_close(first, a, 0.0, 0.0)) << "world-size-1 communicator vs none";
    EXPECT_TRUE(values_close(second, first, 0.0, 0.0)) << "second compute()";
  }
  if (auto* stateful = dynamic_cast<StatefulMetric*>(synced.get())) {
    EXPECT_EQ(ops, testing::expected_collectives(stateful->sync_plan(), testing::holds_samples(c)));
  }
}

class ReferenceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceTest, MatchesTheReferenceAndSyncsIdempotentlyAtWorldSizeOne) {
  const auto cases = reference_cases(GetParam());
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    SCOPED_TRACE(c.at("id").get<std::string>());
    check_case(c);
  }
}

// State on cuda:0 (inputs on the CPU are moved there), with a world-size-1 communicator on the
// CPU: the CPU's values (float sums may differ in the last bits: GPU reductions add in another
// order), compute() twice agrees and leaves the local state digest alone. Skipped without CUDA.
TEST(DeviceTest, StateOnCudaGivesTheCpuResults) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs CUDA (this LibTorch has none, or no GPU is visible)";
  const c10::Device cuda(at::kCUDA, 0);
  for (const auto& c : reference_cases()) {
    SCOPED_TRACE(c.at("id").get<std::string>());
    auto cpu = build(c);
    auto gpu = MetricRegistry::reference().make(c.at("metric").get<std::string>(), c.at("params"), cuda);
    EXPECT_EQ(gpu->device(), cuda);
    auto comm = runtime::make_single_process_communicator(at::kCPU);
    gpu->set_communicator(comm.get());
    feed(*cpu, c);
    feed(*gpu, c);
    const std::string digest = gpu->state_digest();
    Value on_cpu, on_gpu, again;
    const std::string error_cpu = compute_or_error(*cpu, on_cpu);
    EXPECT_EQ(compute_or_error(*gpu, on_gpu), error_cpu);
    EXPECT_EQ(compute_or_error(*gpu, again), error_cpu);
    EXPECT_EQ(gpu->state_digest(), digest);
    if (error_cpu.empty()) {
      EXPECT_TRUE(values_close(on_gpu, on_cpu, 1e-12, 1e-14));
      EXPECT_TRUE(values_close(again, on_gpu, 0.0, 0.0));
    }
  }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(Metrics, ReferenceTest, ::testing::ValuesIn(testing::reference_metric_names()), test_name);

}  // namespace
}  // namespace distmetrics::metrics
