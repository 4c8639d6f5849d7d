// Injected faults for the fault-injection tests (issue 12): one task, `fault_inject`, whose rank
// `rank` misbehaves as `fault` says, the others behaving. Shared by the local-pool test and by
// launch_peer_probe (the same faults under mpirun).
//
//   none             every rank: all_reduce #0, #1                      -> completed
//   skip_collective  the rank skips all_reduce #1                       -> hang
//   extra_collective the rank issues an all_reduce #2 alone             -> hang
//   segfault         SIGSEGV after all_reduce #0                        -> crash
//   abort            std::abort() after all_reduce #0                   -> crash
//   exit3            std::exit(3) after all_reduce #0                   -> crash (exit status 3)
//   sleep            sleeps far past the deadline before all_reduce #1  -> hang
//   loop             spins forever before all_reduce #1                 -> hang
//   sigstop          stops itself (SIGSTOP) before all_reduce #1        -> hang
//   fork_crash       forks a child that sleeps (its pid written to `pid_file`), then SIGSEGV -> crash
//   throw            throws before all_reduce #1                        -> hang (raised alone)
//   shape_mismatch   all_reduce #1 of 5 elements where the others have 4 -> hang (a desync)
//   dtype_mismatch   all_reduce #1 of float32 where the others have float64 -> hang; on gloo a
//                    crash (gloo aborts in the rank)
//   close_fds        closes every descriptor above 2, then all_reduce #1 -> crash (the rank loses
//                    its connection to the supervisor and exits)
//   raw_gloo_skip    gloo only: every other rank issues its own allreduce on the job's
//                    c10d::ProcessGroupGloo (no timeout, unseen by the trace) before all_reduce #1;
//                    the rank skips it                                -> hang, blamed on the rank
//
// And faults of a task that declares its script steps (Communicator::set_issuer), as the scenario
// task does, `script_fault`: update, compute 1, update, compute 2, update, compute 3, each compute
// one all_reduce; the ranks in `ranks` misbehave in compute 2 as `fault` says:
//   none             -> completed
//   extra_barrier    a barrier after compute 2's all_reduce, which the others never issue -> hang
//   cached_compute   compute 2 returns a cached value without its all_reduce (a compute cache on
//                    ranks without a new update) -> hang: their compute 3 all_reduce pairs with
//                    the others' compute 2 one, and the others wait in compute 3's
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/version.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "distmetrics/runtime/task.h"

namespace distmetrics::runtime::fault_test {

inline at::Tensor four() { return at::ones({4}, at::kDouble); }

inline nlohmann::json run_fault(TaskContext& ctx) {
  const std::string fault = ctx.params.value("fault", "none");
  const bool me = ctx.rank == ctx.params.value("rank", 1);
  ctx.comm.all_reduce_copy(four(), ReduceOp::Sum);
  if (!me && fault == "raw_gloo_skip") {
    // The task's own c10d call: the communicator neither sees nor bounds it.
    // The communicator's group is a c10d::ProcessGroup on torch 1.13 and a c10d::Backend from 2.0
    // on (ProcessGroupGloo derives from Backend there): a checked cast to the one this torch has.
#if TORCH_VERSION_MAJOR >= 2
    using C10dGroup = c10d::Backend;
#else
    using C10dGroup = c10d::ProcessGroup;
#endif
    auto* group = dynamic_cast<C10dGroup*>(ctx.comm.process_group().get());
    if (!group) throw std::runtime_error("raw_gloo_skip needs a backend with a c10d process group (gloo)");
    std::vector<at::Tensor> tensors{four()};
    group->allreduce(tensors)->wait();
  }
  if (me) {
    if (fault == "skip_collective") return {{"skipped", true}};
    if (fault == "segfault") ::raise(SIGSEGV);
    if (fault == "abort") std::abort();
    if (fault == "exit3") std::exit(3);
    if (fault == "sleep") std::this_thread::sleep_for(std::chrono::seconds(600));
    if (fault == "loop") {
      volatile unsigned long spin = 0;
      while (true) spin = spin + 1;
    }
    if (fault == "sigstop") ::raise(SIGSTOP);
    if (fault == "fork_crash") {
      const pid_t child = ::fork();
      if (child == 0) {
        ::sleep(600);
        ::_exit(0);
      }
      std::ofstream(ctx.params.value("pid_file", std::string("/dev/null"))) << child << "\n";
      ::raise(SIGSEGV);
    }
    if (fault == "throw") throw std::runtime_error("injected fault on rank " + std::to_string(ctx.rank));
    if (fault == "shape_mismatch") {
      ctx.comm.all_reduce_copy(at::ones({5}, at::kDouble), ReduceOp::Sum);
      return nlohmann::json::object();
    }
    if (fault == "dtype_mismatch") {
      ctx.comm.all_reduce_copy(at::ones({4}, at::kFloat), ReduceOp::Sum);
      return nlohmann::json::object();
    }
    if (fault == "close_fds") {
      for (int fd = 3; fd < 4096; ++fd) ::close(fd);
    }
  }
  const at::Tensor sum = ctx.comm.all_reduce_copy(four(), ReduceOp::Sum);
  if (me && fault == "extra_collective") ctx.comm.all_reduce_copy(four(), ReduceOp::Sum);
  return {{"sum", sum[0].item<double>()}};
}

inline nlohmann::json run_script_fault(TaskContext& ctx) {
  const std::string fault = ctx.params.value("fault", "none");
  const auto ranks = ctx.params.value("ranks", std::vector<int>{});
  const bool me = std::find(ranks.begin(), ranks.end(), ctx.rank) != ranks.end();
  double sum = 0;
  for (int compute = 0; compute < 3; ++compute) {
    const int step = 2 * compute + 1;  // steps 0, 2, 4 are updates: no collective
    ctx.comm.set_issuer(step, compute);
    if (me && compute == 1 && fault == "cached_compute") continue;
    sum = ctx.comm.all_reduce_copy(four(), ReduceOp::Sum)[0].item<double>();
    if (me && compute == 1 && fault == "extra_barrier") ctx.comm.barrier();
  }
  ctx.comm.set_issuer(-1, -1);
  return {{"sum", sum}};
}

}  // namespace distmetrics::runtime::fault_test
