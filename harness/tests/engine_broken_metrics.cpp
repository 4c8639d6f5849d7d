#include "engine_broken_metrics.h"

#include <ATen/ATen.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#include "distmetrics/runtime/comm.h"
#include "distmetrics/harness/metric_catalog.h"
#include "distmetrics/metrics/errors.h"
#include "distmetrics/metrics/registry.h"
#include "distmetrics/metrics/stateful_metric.h"

namespace distmetrics::harness::testing {
namespace {

using metrics::Batch;
using metrics::Value;
using runtime::ReduceOp;

// Local state: the sum of the values, their count, the largest |value|, and the per-batch means.
class MeanBase : public metrics::Metric {
 public:
  explicit MeanBase(std::string name) : name_(std::move(name)) { reset(); }
  std::string name() const override { return name_; }
  void reset() override {
    sum_ = at::zeros({1}, at::kDouble);
    count_ = at::zeros({1}, at::kLong);
    max_abs_ = at::zeros({1}, at::kDouble);
    batch_mean_sum_ = at::zeros({1}, at::kDouble);
    batches_ = at::zeros({1}, at::kLong);
    values_.clear();
  }
  void update(const Batch& batch) override {
    const auto x = batch.input.to(at::kCPU, at::kDouble).reshape({-1});
    sum_ += x.sum();
    count_ += x.numel();
    if (x.numel() > 0) {
      max_abs_ = at::maximum(max_abs_, x.abs().max().reshape({1}));
      batch_mean_sum_ += x.mean();
      batches_ += 1;
    }
    values_.push_back(x);
  }
  void set_communicator(runtime::Communicator* comm) override { comm_ = comm; }
  void to(c10::Device) override {}
  c10::Device device() const override { return c10::Device(c10::kCPU); }
  std::string state_digest() const override {
    std::ostringstream out;
    out << sum_.item<double>() << "/" << count_.item<std::int64_t>() << "/" << max_abs_.item<double>();
    return out.str();
  }

 protected:
  Value mean_of(const at::Tensor& sum, const at::Tensor& count) const {
    if (count.item<std::int64_t>() == 0) throw metrics::NotComputableError(name_, "no samples on any rank");
    return sum.item<double>() / static_cast<double>(count.item<std::int64_t>());
  }
  int rank() const { return comm_ ? comm_->rank() : 0; }

  std::string name_;
  runtime::Communicator* comm_ = nullptr;
  at::Tensor sum_, count_, max_abs_, batch_mean_sum_, batches_;
  std::vector<at::Tensor> values_;
};

class CorrectMean : public MeanBase {
 public:
  CorrectMean() : MeanBase("CorrectMean") {}
  Value compute() override {
    std::vector<at::Tensor> state = {sum_.clone(), count_.clone()};
    if (comm_) comm_->all_reduce(state, runtime::ReduceOp::Sum);
    return mean_of(state[0], state[1]);
  }
};

// Syncs correctly but divides by count - 1 (a sample-variance habit): the same wrong value on
// every rank and world size, so only a reference catches it.
class CountMinusOneMean : public MeanBase {
 public:
  CountMinusOneMean() : MeanBase("CountMinusOneMean") {}
  Value compute() override {
    std::vector<at::Tensor> state = {sum_.clone(), count_.clone()};
    if (comm_) comm_->all_reduce(state, runtime::ReduceOp::Sum);
    return mean_of(state[0], state[1] - 1);
  }
};

class NoSyncMean : public MeanBase {
 public:
  NoSyncMean() : MeanBase("NoSyncMean") {}
  Value compute() override { return mean_of(sum_, count_); }
};

class OverwriteSyncMean : public MeanBase {
 public:
  OverwriteSyncMean() : MeanBase("OverwriteSyncMean") {}
  Value compute() override {
    std::vector<at::Tensor> state = {sum_, count_};  // the local tensors themselves
    if (comm_) comm_->all_reduce(state, runtime::ReduceOp::Sum);
    sum_.copy_(state[0]);
    count_.copy_(state[1]);
    return mean_of(sum_, count_);
  }
};

class SumForMaxAbs : public MeanBase {
 public:
  SumForMaxAbs() : MeanBase("SumForMaxAbs") {}
  Value compute() override {
    std::vector<at::Tensor> state = {max_abs_.clone()};
    if (comm_) comm_->all_reduce(state, runtime::ReduceOp::Sum);  // should be Max
    return state[0].item<double>();
  }
};

class PerBatchMean : public MeanBase {
 public:
  PerBatchMean() : MeanBase("PerBatchMean") {}
  Value compute() override {
    std::vector<at::Tensor> state = {batch_mean_sum_.clone(), batches_.clone()};
    if (comm_) comm_->all_reduce(state, runtime::ReduceOp::Sum);
    return mean_of(state[0], state[1]);
  }
};

class RaiseAloneMean : public MeanBase {
 public:
  RaiseAloneMean() : MeanBase("RaiseAloneMean") {}
  Value compute() override {
    if (count_.item<std::int64_t>() == 0) throw metrics::NotComputableError(name_, "this rank saw no samples");
    std::vector<at::Tensor> state = {sum_.clone(), count_.clone()};
    if (comm_) comm_->all_reduce(state, runtime::ReduceOp::Sum);
    return mean_of(state[0], state[1]);
  }
};

class GatherPerElementMean : public MeanBase {
 public:
  GatherPerElementMean() : MeanBase("GatherPerElementMean") {}
  Value compute() override {
    double sum = 0;
    std::int64_t count = 0;
    for (const auto& batch : values_) {
      for (std::int64_t i = 0; i < batch.numel(); ++i) {
        const auto one = batch.slice(0, i, i + 1);
        for (const auto& part : comm_ ? comm_->all_gather(one) : std::vector<at::Tensor>{one}) {
          sum += part.sum().item<double>();
          count += part.numel();
        }
      }
    }
    return mean_of(at::full({1}, sum, at::kDouble), at::full({1}, count, at::kLong));
  }
};

class AbortOnRank1Mean : public MeanBase {
 public:
  AbortOnRank1Mean() : MeanBase("AbortOnRank1Mean") {}
  Value compute() override {
    if (rank() == 1) std::abort();
    std::vector<at::Tensor> state = {sum_.clone(), count_.clone()};
    if (comm_) comm_->all_reduce(state, runtime::ReduceOp::Sum);
    return mean_of(state[0], state[1]);
  }
};

// No sync in its first compute (each rank returns its own mean: equal_to_single and ranks_agree
// fail there), then rank 1 aborts in its second: a crash after the first compute every rank
// completed, whose verdicts are kept.
class NoSyncThenAbortMean : public MeanBase {
 public:
  NoSyncThenAbortMean() : MeanBase("NoSyncThenAbortMean") {}
  Value compute() override {
    if (++computes_ == 1) return mean_of(sum_, count_);
    if (rank() == 1) std::abort();
    std::vector<at::Tensor> state = {sum_.clone(), count_.clone()};
    if (comm_) comm_->all_reduce(state, runtime::ReduceOp::Sum);
    return mean_of(state[0], state[1]);
  }

 private:
  int computes_ = 0;
};

// Syncs every compute; when it raises (no samples on any rank), every rank but 0 keeps a stale
// cache flag set, and from then on returns the value of its last compute before the raise: the
// next update() and compute() give a stale value on those ranks (recovers_after_error).
class StaleCacheAfterRaiseMean : public MeanBase {
 public:
  StaleCacheAfterRaiseMean() : MeanBase("StaleCacheAfterRaiseMean") {}
  Value compute() override {
    std::vector<at::Tensor> state = {sum_.clone(), count_.clone()};
    if (comm_) comm_->all_reduce(state, runtime::ReduceOp::Sum);
    if (state[1].item<std::int64_t>() == 0) {
      if (rank() != 0) stale_ = true;
      throw metrics::NotComputableError(name_, "no samples on any rank");
    }
    if (stale_ && cached_) return *cached_;
    cached_ = mean_of(state[0], state[1]);
    return *cached_;
  }

 private:
  bool stale_ = false;
  std::optional<Value> cached_;
};

// Syncs into its own state when distributed (as torchmetrics' sync does) and raises, when no rank
// has samples, before it unsyncs: every rank stays synced, and its next update() refuses (the
// single process never syncs, so it recovers). recovers_after_error, not an error outcome.
class StaysSyncedAfterRaiseMean : public MeanBase {
 public:
  StaysSyncedAfterRaiseMean() : MeanBase("StaysSyncedAfterRaiseMean") {}
  void update(const Batch& batch) override {
    if (synced_) throw std::logic_error("update() on a synced metric: the last compute() left it synced");
    MeanBase::update(batch);
  }
  Value compute() override {
    if (!comm_) return mean_of(sum_, count_);
    std::vector<at::Tensor> state = {sum_, count_};
    comm_->all_reduce(state, runtime::ReduceOp::Sum);
    synced_ = true;
    const Value value = mean_of(sum_, count_);  // raises with the metric still synced
    synced_ = false;
    return value;
  }

 private:
  bool synced_ = false;
};

// With no samples on any rank, the distributed compute() indexes the synced (empty) state and
// raises std::out_of_range, where the single process raises NotComputableError: expected_error
// fails at the declared compute, and what comes after it is still judged (it recovers).
class AnotherErrorWhenDistributedMean : public MeanBase {
 public:
  AnotherErrorWhenDistributedMean() : MeanBase("AnotherErrorWhenDistributedMean") {}
  Value compute() override {
    if (!comm_) return mean_of(sum_, count_);
    std::vector<at::Tensor> state = {sum_.clone(), count_.clone()};
    comm_->all_reduce(state, runtime::ReduceOp::Sum);
    if (state[1].item<std::int64_t>() == 0) throw std::out_of_range("index 0 is out of bounds for a state of no samples");
    return mean_of(state[0], state[1]);
  }
};

// Rank 1 asks for 64 GiB in its second update, far past any --rank-memory a test gives: the
// allocation fails there (untouched, the request costs nothing where it succeeds).
class AllocatesTooMuchOnRank1Mean : public MeanBase {
 public:
  AllocatesTooMuchOnRank1Mean() : MeanBase("AllocatesTooMuchOnRank1Mean") {}
  void update(const Batch& batch) override {
    if (rank() == 1 && ++updates_ == 2) scratch_ = at::empty({std::int64_t{64} << 30}, at::kByte);
    MeanBase::update(batch);
  }
  Value compute() override {
    std::vector<at::Tensor> state = {sum_.clone(), count_.clone()};
    if (comm_) comm_->all_reduce(state, runtime::ReduceOp::Sum);
    return mean_of(state[0], state[1]);
  }

 private:
  int updates_ = 0;
  at::Tensor scratch_;
};

// A rank-local cache on rank 1 only: a compute with no new samples since the last one returns the
// cached value without syncing, so rank 1 skips compute 2's collectives and its compute 3's are
// paired with rank 0's compute 2 ones (a desync named by compute).
class RankLocalCacheMean : public MeanBase {
 public:
  RankLocalCacheMean() : MeanBase("RankLocalCacheMean") {}
  Value compute() override {
    const auto count = count_.item<std::int64_t>();
    if (rank() == 1 && cached_ && count == cached_count_) return *cached_;
    std::vector<at::Tensor> state = {sum_.clone(), count_.clone()};
    if (comm_) comm_->all_reduce(state, runtime::ReduceOp::Sum);
    cached_ = mean_of(state[0], state[1]);
    cached_count_ = count;
    return *cached_;
  }

 private:
  std::optional<Value> cached_;
  std::int64_t cached_count_ = -1;
};

// Right but for one rank in its first compute at world size > 1, where it breaks the metric's
// sequence: Extra issues a barrier after its sync, Skip returns its own mean without syncing,
// Gather gathers its sum where its peers reduce it. At world size 2 the ranks split evenly: only
// the metric's own sequence (the single-process run's) tells which rank broke it.
enum class Break { Extra, Skip, Gather };
template <Break kBreak, int kRank>
class BreaksFirstComputeMean : public MeanBase {
 public:
  explicit BreaksFirstComputeMean(std::string name) : MeanBase(std::move(name)) {}
  Value compute() override {
    std::vector<at::Tensor> state = {sum_.clone(), count_.clone()};
    const bool breaks = comm_ && comm_->world_size() > 1 && comm_->rank() == kRank && computes_++ == 0;
    if (!breaks) {
      if (comm_) comm_->all_reduce(state, runtime::ReduceOp::Sum);
    } else if (kBreak == Break::Extra) {
      comm_->all_reduce(state, runtime::ReduceOp::Sum);
      comm_->barrier();
    } else if (kBreak == Break::Gather) {
      (void)comm_->all_gather(sum_);
    }
    return mean_of(state[0], state[1]);
  }

 private:
  int computes_ = 0;
};
class ExtraBarrierOnRank1Mean : public BreaksFirstComputeMean<Break::Extra, 1> {
 public:
  ExtraBarrierOnRank1Mean() : BreaksFirstComputeMean("ExtraBarrierOnRank1Mean") {}
};
class SkipsSyncOnRank0Mean : public BreaksFirstComputeMean<Break::Skip, 0> {
 public:
  SkipsSyncOnRank0Mean() : BreaksFirstComputeMean("SkipsSyncOnRank0Mean") {}
};
class GathersOnRank0Mean : public BreaksFirstComputeMean<Break::Gather, 0> {
 public:
  GathersOnRank0Mean() : BreaksFirstComputeMean("GathersOnRank0Mean") {}
};

// Rank 1 says what it is about to do, then dies of SIGSEGV in its second update().
class SegfaultInUpdateMean : public MeanBase {
 public:
  SegfaultInUpdateMean() : MeanBase("SegfaultInUpdateMean") {}
  void update(const Batch& batch) override {
    if (rank() == 1 && ++updates_ == 2) {
      std::fprintf(stderr, "SegfaultInUpdateMean: rank 1 about to fail in its second update\n");
      std::fflush(stderr);
      std::raise(SIGSEGV);
    }
    MeanBase::update(batch);
  }
  Value compute() override {
    std::vector<at::Tensor> state = {sum_.clone(), count_.clone()};
    if (comm_) comm_->all_reduce(state, runtime::ReduceOp::Sum);
    return mean_of(state[0], state[1]);
  }

 private:
  int updates_ = 0;
};

class RejectsWhenDistributedMean : public MeanBase {
 public:
  RejectsWhenDistributedMean() : MeanBase("RejectsWhenDistributedMean") {}
  void update(const Batch& batch) override {
    if (comm_ && comm_->world_size() > 1)
      throw metrics::InputError(name_, "input", "a single process", "a communicator of world size " +
                                                                        std::to_string(comm_->world_size()));
    MeanBase::update(batch);
  }
  Value compute() override { return mean_of(sum_, count_); }
};

// Raises on a batch with no rows (as many libraries check their input first); otherwise right.
class RejectsEmptyMean : public CorrectMean {
 public:
  RejectsEmptyMean() { name_ = "RejectsEmptyMean"; }
  void update(const Batch& batch) override {
    if (batch.input.numel() == 0) throw metrics::InputError(name_, "input", "a non-empty batch", "no rows");
    CorrectMean::update(batch);
  }
};

// Rejects an empty batch, and never syncs: the distributed finding must not hide behind the
// empty batch.
class RejectsEmptyNoSyncMean : public NoSyncMean {
 public:
  RejectsEmptyNoSyncMean() { name_ = "RejectsEmptyNoSyncMean"; }
  void update(const Batch& batch) override {
    if (batch.input.numel() == 0) throw metrics::InputError(name_, "input", "a non-empty batch", "no rows");
    NoSyncMean::update(batch);
  }
};

// Adds each batch's mean times its size: right for every batch with rows, NaN (0 * NaN) from an
// empty one on, as a metric that averages within the batch first would.
class NanAfterEmptyMean : public CorrectMean {
 public:
  NanAfterEmptyMean() { name_ = "NanAfterEmptyMean"; }
  void update(const Batch& batch) override {
    const auto x = batch.input.to(at::kCPU, at::kDouble).reshape({-1});
    sum_ += x.mean() * static_cast<double>(x.numel());
    count_ += x.numel();
  }
};

// A C++ metric's way to say "not this variant": any exception class named Unsupported.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Right, but cannot run on three ranks (it says so when it gets its communicator).
class UnsupportedOnThreeRanksMean : public CorrectMean {
 public:
  UnsupportedOnThreeRanksMean() { name_ = "UnsupportedOnThreeRanksMean"; }
  void set_communicator(runtime::Communicator* comm) override {
    if (comm && comm->world_size() == 3) throw Unsupported("this mean is not written for 3 ranks");
    CorrectMean::set_communicator(comm);
  }
};

// Right everywhere, but without a communicator (the single-process reference) its second update
// never finishes: the reference must be ended at the variant's deadline. (The first one passes:
// loading the scenario tries the metric on one batch.)
class EndlessWhenAloneMean : public MeanBase {
 public:
  EndlessWhenAloneMean() : MeanBase("EndlessWhenAloneMean") {}
  void update(const Batch& batch) override {
    while (comm_ == nullptr && updates_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ++updates_;
    MeanBase::update(batch);
  }
  Value compute() override { return mean_of(sum_, count_); }

 private:
  int updates_ = 0;
};

// The mean through StatefulMetric's declared states (sum SUM, count SUM), so save_state,
// load_state and merge_state come from the base: the positive control of state_roundtrip and
// merge_state.
class StatefulMean : public metrics::StatefulMetric {
 public:
  explicit StatefulMean(std::string name = "StatefulMean") : StatefulMetric(std::move(name)) {
    add_state("sum", at::zeros({}, at::kDouble), metrics::Reduction::Sum);
    add_state("count", at::zeros({}, at::kLong), metrics::Reduction::Sum);
  }

 protected:
  void update_state(const Batch& batch) override {
    const auto x = batch.input.to(at::kDouble).reshape({-1});
    state("sum") += x.sum();
    state("count") += x.numel();
  }
  Value compute_from(const metrics::StateValues& synced) const override {
    if (synced["count"].item<std::int64_t>() == 0) throw metrics::NotComputableError(name(), "no samples on any rank");
    return synced["sum"].item<double>() / static_cast<double>(synced["count"].item<std::int64_t>());
  }
};

// save_state() leaves the count out (as torchmetrics' state_dict() does for a state not declared
// persistent) and load_state() keeps what it has for a missing state: the restored count starts
// again from zero.
class CountNotSavedMean : public StatefulMean {
 public:
  CountNotSavedMean() : StatefulMean("CountNotSavedMean") {}
  std::optional<std::string> save_state() const override {
    auto states = metrics::unpack_states(*StatefulMean::save_state());
    states.erase("count");
    return metrics::pack_states(states);
  }
  void load_state(const std::string& saved) override {
    auto states = metrics::unpack_states(saved);
    if (!states.count("count")) states["count"] = state("count").clone();
    StatefulMean::load_state(metrics::pack_states(states));
  }
};

// merge_state() takes the others' states in place of its own (a merge that forgets `self`).
class MergeForgetsSelfMean : public StatefulMean {
 public:
  MergeForgetsSelfMean() : StatefulMean("MergeForgetsSelfMean") {}
  void merge_state(const std::vector<std::string>& others_saved) override {
    reset();
    StatefulMean::merge_state(others_saved);
  }
};

// The positive control that logs its merges: each merge_state() appends this process's pid to the
// file DISTMETRICS_TEST_MERGE_LOG names (merge_state's probe merges once a compute, on one rank).
class MergeLoggingMean : public StatefulMean {
 public:
  MergeLoggingMean() : StatefulMean("MergeLoggingMean") {}
  void merge_state(const std::vector<std::string>& others_saved) override {
    if (const char* path = std::getenv("DISTMETRICS_TEST_MERGE_LOG")) {
      if (std::FILE* log = std::fopen(path, "a")) {
        std::fprintf(log, "%ld\n", static_cast<long>(::getpid()));
        std::fclose(log);
      }
    }
    StatefulMean::merge_state(others_saved);
  }
};

// Counts its samples in the input's dtype (a count state that follows the input, as in a metric
// that builds its counter with torch.ones_like(input).sum()): exact in float32 up to 2^24, but in
// float16 a count of ones stops growing at 2048 (bfloat16: 256). Sums are float64, synced right.
class InputDtypeCountMean : public MeanBase {
 public:
  InputDtypeCountMean() : MeanBase("InputDtypeCountMean") { low_count_ = at::zeros({1}, at::kDouble); }
  void reset() override {
    MeanBase::reset();
    low_count_ = at::zeros({1}, at::kDouble);
  }
  void update(const Batch& batch) override {
    MeanBase::update(batch);
    const auto x = batch.input.reshape({-1});
    auto count = low_count_.to(x.scalar_type());
    for (std::int64_t i = 0; i < x.numel(); ++i) count += 1;  // one by one, in the input's dtype
    low_count_ = count;
  }
  Value compute() override {
    std::vector<at::Tensor> state = {sum_.clone(), low_count_.to(at::kDouble)};
    if (comm_) comm_->all_reduce(state, runtime::ReduceOp::Sum);
    if (state[1].item<double>() == 0) throw metrics::NotComputableError(name_, "no samples on any rank");
    return state[0].item<double>() / state[1].item<double>();
  }

 private:
  at::Tensor low_count_;
};

template <typename M>
metrics::MetricSpec spec(const std::string& name, const std::string& what) {
  return {name, "aggregation", what, {}, [](const nlohmann::json&) { return std::make_unique<M>(); }};
}

metrics::MetricRegistry& registry() {
  static metrics::MetricRegistry r = [] {
    metrics::MetricRegistry reg;
    reg.add(spec<CorrectMean>("CorrectMean", "mean of input; sum and count synced as copies"));
    reg.add(spec<NoSyncMean>("NoSyncMean", "mean of input; never syncs"));
    reg.add(spec<CountMinusOneMean>("CountMinusOneMean", "sum of input over count - 1, synced correctly"));
    reg.add(spec<OverwriteSyncMean>("OverwriteSyncMean", "mean of input; syncs in place"));
    reg.add(spec<SumForMaxAbs>("SumForMaxAbs", "largest |input|; reduced with SUM"));
    reg.add(spec<PerBatchMean>("PerBatchMean", "mean of per-batch means"));
    reg.add(spec<RaiseAloneMean>("RaiseAloneMean", "mean of input; raises alone on an empty rank"));
    reg.add(spec<GatherPerElementMean>("GatherPerElementMean", "mean of input; one all_gather per element"));
    reg.add(spec<RejectsWhenDistributedMean>("RejectsWhenDistributedMean", "mean of input; rejects every batch when distributed"));
    reg.add(spec<EndlessWhenAloneMean>("EndlessWhenAloneMean", "mean of input; never finishes without a communicator"));
    reg.add(spec<AbortOnRank1Mean>("AbortOnRank1Mean", "mean of input; rank 1 aborts in compute"));
    reg.add(spec<AllocatesTooMuchOnRank1Mean>("AllocatesTooMuchOnRank1Mean", "mean of input; rank 1 asks for 64 GiB in its second update"));
    reg.add(spec<NoSyncThenAbortMean>("NoSyncThenAbortMean", "mean of input; no sync in compute 1, rank 1 aborts in compute 2"));
    reg.add(spec<StaleCacheAfterRaiseMean>("StaleCacheAfterRaiseMean", "mean of input; ranks but 0 return a stale cache after compute raised"));
    reg.add(spec<StaysSyncedAfterRaiseMean>("StaysSyncedAfterRaiseMean", "mean of input; a raising compute leaves it synced, and update() refuses"));
    reg.add(spec<AnotherErrorWhenDistributedMean>("AnotherErrorWhenDistributedMean", "mean of input; with no data, raises out_of_range when distributed"));
    reg.add(spec<RankLocalCacheMean>("RankLocalCacheMean", "mean of input; rank 1 caches computes without new samples"));
    reg.add(spec<ExtraBarrierOnRank1Mean>("ExtraBarrierOnRank1Mean", "mean of input; rank 1 adds a barrier in its first compute"));
    reg.add(spec<SkipsSyncOnRank0Mean>("SkipsSyncOnRank0Mean", "mean of input; rank 0 skips its first compute's sync"));
    reg.add(spec<GathersOnRank0Mean>("GathersOnRank0Mean", "mean of input; rank 0 gathers where its peers reduce, once"));
    reg.add(spec<SegfaultInUpdateMean>("SegfaultInUpdateMean", "mean of input; rank 1 dies in its second update"));
    reg.add(spec<StatefulMean>("StatefulMean", "mean of input; declared states: saves, loads and merges them"));
    reg.add(spec<CountNotSavedMean>("CountNotSavedMean", "mean of input; save_state() leaves the count out"));
    reg.add(spec<MergeForgetsSelfMean>("MergeForgetsSelfMean", "mean of input; merge_state() forgets its own state"));
    reg.add(spec<MergeLoggingMean>("MergeLoggingMean", "mean of input; declared states; logs each merge_state()"));
    reg.add(spec<RejectsEmptyMean>("RejectsEmptyMean", "mean of input; raises on an empty batch"));
    reg.add(spec<RejectsEmptyNoSyncMean>("RejectsEmptyNoSyncMean", "mean of input; raises on an empty batch, never syncs"));
    reg.add(spec<NanAfterEmptyMean>("NanAfterEmptyMean", "mean of input; an empty batch adds NaN"));
    reg.add(spec<UnsupportedOnThreeRanksMean>("UnsupportedOnThreeRanksMean", "mean of input; Unsupported on 3 ranks"));
    reg.add(spec<InputDtypeCountMean>("InputDtypeCountMean", "mean of input; counts samples in the input's dtype"));
    return reg;
  }();
  return r;
}

const bool registered = [] {
  register_broken_metrics();
  return true;
}();

}  // namespace

void register_broken_metrics() { MetricCatalog::instance().add("broken", &registry()); }

}  // namespace distmetrics::harness::testing
