// The StatefulMetric base at world size 1: states of every reduction, sync of copies, collective
// counts, reset, digests, phases.
#include "distmetrics/metrics/stateful_metric.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "distmetrics/runtime/comm.h"
#include "distmetrics/metrics/errors.h"
#include "test_support.h"

namespace distmetrics::metrics {
namespace {

// A metric with a state of every kind. input: [N] float64 values.
class Probe : public StatefulMetric {
 public:
  Probe() : StatefulMetric("Probe") {
    add_state("count", at::zeros({}, at::kLong), Reduction::Sum);
    add_state("sum", at::zeros({}, at::kDouble), Reduction::Sum);
    add_state("largest", at::full({}, -INFINITY, at::kDouble), Reduction::Max);
    add_state("smallest_count", at::full({}, std::numeric_limits<std::int64_t>::max(), at::kLong), Reduction::Min);
    add_state("product", at::ones({}, at::kDouble), Reduction::Prod);
    add_state("values", at::empty({0}, at::kDouble), Reduction::Gather);
    add_state("sizes", at::empty({0, 2}, at::kLong), Reduction::Gather);
  }
  int computes = 0;

 protected:
  void update_state(const Batch& batch) override {
    const at::Tensor& x = batch.input;
    state("count") += x.numel();
    state("sum") += x.sum();
    if (x.numel() > 0) state("largest") = at::maximum(state("largest"), x.max());
    state("smallest_count") = at::minimum(state("smallest_count"), at::full({}, x.numel(), at::kLong));
    state("product") *= x.prod();
    append("values", x);
    append("sizes", at::tensor({x.numel(), std::int64_t{1}}, at::kLong).view({1, 2}));
  }
  Value compute_from(const StateValues& s) const override {
    if (s["count"].item<std::int64_t>() == 0) throw NotComputableError(name(), "no samples on any rank");
    return Value::named({{"count", static_cast<double>(s["count"].item<std::int64_t>())},
                         {"sum", s["sum"].item<double>()},
                         {"largest", s["largest"].item<double>()},
                         {"smallest_count", static_cast<double>(s["smallest_count"].item<std::int64_t>())},
                         {"product", s["product"].item<double>()},
                         {"values", Value(s["values"])},
                         {"batches", static_cast<double>(s["sizes"].size(0))}});
  }
};

Batch values(std::vector<double> v) {
  Batch b;
  b.input = at::tensor(v, at::kDouble);
  return b;
}

std::vector<std::string> ops_since(const runtime::Communicator& comm, std::size_t from) {
  std::vector<std::string> out;
  for (std::size_t i = from; i < comm.trace().size(); ++i) out.push_back(comm.trace()[i].op + " " + comm.trace()[i].dtype);
  return out;
}

TEST(StatefulMetricTest, SyncPlanHasOneCollectivePerReductionAndDtypePlusTheGathers) {
  Probe probe;
  const std::vector<std::string> expected = {
      "all_reduce(sum) int64",  "all_reduce(sum) float64",   "all_reduce(max) float64",
      "all_reduce(min) int64",  "all_reduce(prod) float64",  "all_gather(shapes) int64",
      "all_gather uint8"};  // the int64 and float64 gather states' bytes in one collective
  EXPECT_EQ(probe.sync_plan(), expected);

  auto comm = runtime::make_single_process_communicator();
  probe.set_communicator(comm.get());
  probe.update(values({1.0, 2.0, 4.0}));
  probe.compute();
  EXPECT_EQ(ops_since(*comm, 0), expected) << "the trace of one compute() is the plan";
  EXPECT_EQ(comm->collectives_issued(), expected.size());
}

TEST(StatefulMetricTest, ComputeTwiceAgreesAndLeavesLocalStateAlone) {
  Probe probe;
  auto comm = runtime::make_single_process_communicator();
  probe.set_communicator(comm.get());
  probe.update(values({1.0, 2.0}));
  probe.update(values({}));
  probe.update(values({3.0}));
  const std::string digest = probe.state_digest();
  const Value first = probe.compute();
  EXPECT_EQ(probe.state_digest(), digest);
  const Value second = probe.compute();
  EXPECT_EQ(probe.state_digest(), digest);
  EXPECT_EQ(first.to_json(), second.to_json());
  EXPECT_EQ(first.at("count").scalar(), 3);
  EXPECT_EQ(first.at("sum").scalar(), 6.0);
  EXPECT_EQ(first.at("largest").scalar(), 3.0);
  EXPECT_EQ(first.at("smallest_count").scalar(), 0);
  EXPECT_EQ(first.at("product").scalar(), 6.0);
  EXPECT_EQ(first.at("batches").scalar(), 3);
  EXPECT_EQ(first.at("values").to_json().at("values"), nlohmann::json({1.0, 2.0, 3.0}));
}

TEST(StatefulMetricTest, UpdateAfterComputeCountsEverySampleOnce) {
  Probe probe;
  auto comm = runtime::make_single_process_communicator();
  probe.set_communicator(comm.get());
  probe.update(values({1.0, 2.0}));
  EXPECT_EQ(probe.compute().at("count").scalar(), 2);
  probe.update(values({3.0}));
  const Value v = probe.compute();
  EXPECT_EQ(v.at("count").scalar(), 3);
  EXPECT_EQ(v.at("sum").scalar(), 6.0);
  EXPECT_EQ(v.at("product").scalar(), 6.0);
  EXPECT_EQ(v.at("values").to_json().at("values"), nlohmann::json({1.0, 2.0, 3.0}));
}

TEST(StatefulMetricTest, ResetRestoresTheDeclaredDefaults) {
  Probe fresh, used;
  const std::string initial = fresh.state_digest();
  used.update(values({5.0, 6.0}));
  EXPECT_NE(used.state_digest(), initial);
  used.reset();
  EXPECT_EQ(used.state_digest(), initial);
  EXPECT_THROW(used.compute(), NotComputableError);
  used.update(values({7.0}));
  EXPECT_EQ(used.compute().at("sum").scalar(), 7.0);
}

TEST(StatefulMetricTest, NoCommunicatorAndWorldSizeOneGiveIdenticalResults) {
  Probe alone, synced;
  auto comm = runtime::make_single_process_communicator();
  synced.set_communicator(comm.get());
  for (auto* m : {&alone, &synced}) {
    m->update(values({0.1, 0.2, 0.3}));
    m->update(values({1e-17}));
  }
  EXPECT_EQ(alone.compute().to_json(), synced.compute().to_json());
  EXPECT_EQ(alone.state_digest(), synced.state_digest());
}

TEST(StatefulMetricTest, GatherStatesWithNoRowsSyncToEmptyTensors) {
  Probe probe;
  auto comm = runtime::make_single_process_communicator();
  probe.set_communicator(comm.get());
  probe.update(values({}));  // a batch with no samples: one row in "sizes", none in "values"
  const StateValues synced = probe.sync();
  EXPECT_EQ(synced["values"].sizes(), at::IntArrayRef({0}));
  EXPECT_EQ(synced["sizes"].sizes(), at::IntArrayRef({1, 2}));
  // No rank holds a float64 row, but "sizes" has one: the one gather of bytes still runs.
  EXPECT_EQ(ops_since(*comm, 0), probe.sync_plan());
}

TEST(StatefulMetricTest, DigestCoversNamesDtypesShapesAndBytes) {
  Probe a, b;
  a.update(values({1.0}));
  b.update(values({1.0}));
  EXPECT_EQ(a.state_digest(), b.state_digest());
  b.update(values({}));  // only "sizes" changes: one more row
  EXPECT_NE(a.state_digest(), b.state_digest());
  EXPECT_EQ(a.state_digest().size(), 16u);
}

// save_state/load_state/merge_state (the state_roundtrip and merge_state properties): a fresh
// instance that loads a state equals the one that saved it, and merging other instances' states
// combines every state with its reduction, as the sync does across ranks.
TEST(StatefulMetricTest, SavedStatesLoadIntoAFreshInstanceAndMergeWithTheirReductions) {
  Probe a, b, c, whole;
  a.update(values({1.0, 2.0}));
  b.update(values({}));
  b.update(values({-4.0, 0.5}));
  c.update(values({3.0}));
  for (const auto& v : std::vector<std::vector<double>>{{1.0, 2.0}, {}, {-4.0, 0.5}, {3.0}}) whole.update(values(v));

  Probe restored;
  restored.load_state(*a.save_state());
  EXPECT_EQ(restored.state_digest(), a.state_digest());
  EXPECT_EQ(restored.compute().to_json(), a.compute().to_json());
  ASSERT_TRUE(restored.can_merge_state());
  restored.merge_state({*b.save_state(), *c.save_state()});
  // Sum, max, min (of batch sizes: b's empty batch), prod, and the gathers in order.
  EXPECT_EQ(restored.compute().to_json(), whole.compute().to_json());
  restored.update(values({7.0}));  // and it goes on like any instance
  whole.update(values({7.0}));
  EXPECT_EQ(restored.state_digest(), whole.state_digest());

  // The saved form is a dict of name to tensor (torch.load reads it), gathers as their rows.
  const auto saved = unpack_states(*a.save_state());
  ASSERT_EQ(saved.size(), 7u);
  EXPECT_EQ(saved.at("values").sizes(), at::IntArrayRef({2}));
  EXPECT_EQ(saved.at("sizes").sizes(), at::IntArrayRef({1, 2}));
  auto message_of = [](Probe& p, const std::map<std::string, at::Tensor>& states) {
    try {
      p.load_state(pack_states(states));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto missing = saved;
  missing.erase("sum");
  EXPECT_EQ(message_of(restored, missing), "Probe: load_state: the saved state has no \"sum\"");
  auto wrong = saved;
  wrong["sum"] = at::zeros({}, at::kFloat);
  EXPECT_EQ(message_of(restored, wrong), "Probe: load_state: state \"sum\" is float32 [], declared float64");
  EXPECT_THROW(restored.load_state("not a pickle"), std::invalid_argument);
}

TEST(StatefulMetricTest, StatesAreListedWithTheirReductions) {
  Probe probe;
  const auto states = probe.states();
  ASSERT_EQ(states.size(), 7u);
  EXPECT_EQ(states[2].name, "largest");
  EXPECT_EQ(states[2].reduction, Reduction::Max);
  EXPECT_EQ(states[6].name, "sizes");
  EXPECT_EQ(states[6].reduction, Reduction::Gather);
  EXPECT_EQ(states[6].shape, std::vector<std::int64_t>({2}));
  EXPECT_EQ(states[6].dtype, at::kLong);
}

// Two phases: a check on the first phase's synced values stops the sync before the second.
class Phased : public StatefulMetric {
 public:
  Phased() : StatefulMetric("Phased") {
    add_state("steps", at::zeros({}, at::kLong), Reduction::Max);
    add_state("history", at::zeros({0}, at::kDouble), Reduction::Sum);
  }
  bool refuse = false;

 protected:
  void update_state(const Batch& batch) override {
    state("steps") += 1;
    state("history") = at::cat({state("history"), batch.input.sum().view({1})});
  }
  Value compute_from(const StateValues& s) const override { return Value(s["history"]); }
  std::vector<std::vector<std::string>> sync_phases() const override { return {{"steps"}, {"history"}}; }
  void check_phase(std::size_t phase, const StateValues& s) const override {
    if (phase == 0 && refuse) throw SyncError(name(), "steps " + std::to_string(s["steps"].item<std::int64_t>()));
  }
};

TEST(StatefulMetricTest, PhasesSyncInOrderAndACheckStopsBeforeTheNextPhase) {
  Phased m;
  auto comm = runtime::make_single_process_communicator();
  m.set_communicator(comm.get());
  m.update(values({1.0, 2.0}));
  m.update(values({4.0}));
  EXPECT_EQ(m.sync_plan(), std::vector<std::string>({"all_reduce(max) int64", "all_reduce(sum) float64"}));
  EXPECT_EQ(m.compute().to_json().at("values"), nlohmann::json({3.0, 4.0}));
  m.refuse = true;
  const std::size_t before = comm->trace().size();
  try {
    m.compute();
    FAIL() << "expected SyncError";
  } catch (const SyncError& e) {
    EXPECT_STREQ(e.what(), "Phased: the ranks disagree: steps 2");
  }
  EXPECT_EQ(ops_since(*comm, before), std::vector<std::string>({"all_reduce(max) int64"}));
}

TEST(StatefulMetricTest, StateLivesOnTheMetricDevice) {
  Probe probe;
  probe.to(at::kCPU);
  EXPECT_EQ(probe.device(), c10::Device(at::kCPU));
  probe.update(values({2.0}));
  EXPECT_EQ(probe.compute().at("sum").scalar(), 2.0);
}

}  // namespace
}  // namespace distmetrics::metrics
