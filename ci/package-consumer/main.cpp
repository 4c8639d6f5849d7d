// Uses an installed distmetrics: a reference metric computed on one process, and the same data
// split over a pool of 2 ranks (workers are this very program, started again by the pool).
// Prints both and exits 0 when they agree.
#include <ATen/ATen.h>

#include <iostream>

#include "distmetrics/build_config.h"
#include "distmetrics/runtime/rank_pool.h"
#include "distmetrics/runtime/task.h"
#include "distmetrics/metrics/registry.h"

namespace dr = distmetrics::runtime;
namespace dm = distmetrics::metrics;

namespace {

// Ten samples with |input - target| = 0, 0.5, ..., 4.5: the mean absolute error is 2.25.
dm::Batch samples(std::int64_t rank, std::int64_t world_size) {
  at::Tensor input = at::arange(10, at::kDouble) * 0.5;
  at::Tensor rows = at::arange(rank, 10, world_size, at::kLong);  // rank r takes rows r, r + N, ...
  return dm::Batch{input.index_select(0, rows), at::zeros({rows.size(0)}, at::kDouble), at::Tensor()};
}

double mean_absolute_error(dr::Communicator& comm) {
  auto metric = dm::MetricRegistry::reference().make("MeanAbsoluteError", nlohmann::json::object());
  metric->set_communicator(&comm);
  metric->update(samples(comm.rank(), comm.world_size()));
  return metric->compute().scalar();
}

}  // namespace

DISTMETRICS_TASK(consumer_mean_absolute_error) { return {{"value", mean_absolute_error(ctx.comm)}}; }

int main(int argc, char** argv) {
  if (auto code = dr::run_worker_if_requested(argc, argv)) return *code;

  auto single = dr::make_single_process_communicator();
  const double on_one = mean_absolute_error(*single);
  std::cout << "consumer: distmetrics " << DISTMETRICS_VERSION << ", MeanAbsoluteError on one process = " << on_one
            << std::endl;
  if (!DISTMETRICS_HAVE_GLOO) {
    std::cout << "consumer: this distmetrics has no gloo backend; only one process was checked" << std::endl;
    return on_one == 2.25 ? 0 : 1;
  }

  dr::PoolOptions options;
  options.world_size = 2;
  dr::RankPool pool(options);
  dr::Job request;
  request.id = "consumer/gloo/ws2";
  request.task = "consumer_mean_absolute_error";
  request.backend = "gloo";
  request.deadline = std::chrono::seconds(60);
  const dr::JobResult run = pool.run(request);
  if (run.status != dr::RunStatus::Completed) {
    std::cout << "consumer: the 2-rank run ended in " << dr::to_string(run.status) << ": " << run.diagnosis << std::endl;
    return 1;
  }
  bool agree = on_one == 2.25;
  for (const auto& rank : run.ranks) {
    const double value = rank.result.at("value").get<double>();
    std::cout << "consumer: MeanAbsoluteError on rank " << rank.rank << " of 2 = " << value << std::endl;
    agree = agree && value == on_one;
  }
  std::cout << (agree ? "consumer: ranks agree with one process" : "consumer: MISMATCH") << std::endl;
  return agree ? 0 : 1;
}
