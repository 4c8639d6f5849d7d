// A program for the peer-runner tests, started by mpirun or with torchrun-style variables:
//   launch_peer_probe <mpi|env> <backend>
// It runs the same jobs on every rank through a PeerRunner. Every rank prints
//   RANK <r> SAW <status> <blamed rank>
// per job; rank 0 also prints
//   VARIANT <the JobResult as JSON>
// After the hang job it checks that the runner refuses to go on (printing STOPPED) and
// exits 0 (a non-zero exit would make mpirun kill the ranks that have not printed yet).
#include <ATen/ATen.h>

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <optional>
#include <thread>

#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/peer_runner.h"
#include "distmetrics/runtime/task.h"
#include "../src/launch/peer_teardown.h"
#include "launch_faults.h"

namespace dr = distmetrics::runtime;
using namespace std::chrono_literals;

DISTMETRICS_TASK(peer_sum_of_ranks) {
  at::Tensor sum = ctx.comm.all_reduce_copy(at::full({1}, double(ctx.rank), at::kDouble), dr::ReduceOp::Sum);
  return {{"sum", sum.item<double>()}, {"world_size", ctx.world_size}};
}

DISTMETRICS_TASK(peer_every_rank_raises) { throw std::runtime_error("nothing to compute on rank " + std::to_string(ctx.rank)); }

DISTMETRICS_TASK(peer_skip_second_collective) {
  ctx.comm.all_reduce_copy(at::ones({4}, at::kDouble), dr::ReduceOp::Sum);
  if (ctx.rank != 1) ctx.comm.all_reduce_copy(at::ones({4}, at::kDouble), dr::ReduceOp::Sum);
  return nlohmann::json::object();
}

// The TCP sockets this process listens on (state 0A in /proc/net/tcp and tcp6, whose inode is
// one of this process's descriptors), as "local-address:port" in the kernel's hex.
std::vector<std::string> tcp_listeners_of_this_process() {
  std::set<std::string> inodes;
  if (DIR* fds = ::opendir("/proc/self/fd")) {
    while (dirent* entry = ::readdir(fds)) {
      char target[256] = {0};
      const std::string link = std::string("/proc/self/fd/") + entry->d_name;
      if (::readlink(link.c_str(), target, sizeof(target) - 1) > 0 && std::string(target).rfind("socket:[", 0) == 0) {
        inodes.insert(std::string(target).substr(8, std::string(target).size() - 9));
      }
    }
    ::closedir(fds);
  }
  std::vector<std::string> listeners;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      words >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
      if (state == "0A" && inodes.count(inode)) listeners.push_back(local);
    }
  }
  return listeners;
}

DISTMETRICS_TASK(fault_inject) { return dr::fault_test::run_fault(ctx); }

// `iterations` all_reduces of 256 doubles, `pause_ms` apart: a job that lasts long enough
// for a fault to come in the middle of its collectives (the multi-host tests).
DISTMETRICS_TASK(peer_collectives_for) {
  const int iterations = ctx.params.value("iterations", 10);
  const int pause_ms = ctx.params.value("pause_ms", 10);
  double sum = 0;
  for (int i = 0; i < iterations; ++i) {
    sum = ctx.comm.all_reduce_copy(at::full({256}, double(ctx.rank), at::kDouble), dr::ReduceOp::Sum)[0].item<double>();
    if (i == 0) std::cout << "RANK " << ctx.rank << " IN COLLECTIVES" << std::endl;  // a fault may come now
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  }
  return {{"sum", sum}, {"iterations", iterations}};
}

// launch_peer_probe <mpi|env> <backend> multihost ITERATIONS DEADLINE_MS [CONNECT_MS [WRITE_DELAY_MS]]:
// one job of peer_collectives_for (10 ms apart) with that deadline, a report grace of 0.5 s and
// that connect deadline (5 s unless given). With WRITE_DELAY_MS, rank 0 writes its report only
// once the launcher's SIGTERM has come (held by the runner; at most 5 s), WRITE_DELAY_MS after
// it, printing HELD <signal> <time>: the report must survive the teardown it was held for; rank 0
// prints VARIANT and how long the job took (SECONDS), every rank finishes with the runner's
// code (3 hang, 4 crash, 1 otherwise) and rank 0 returns it.
double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int run_multihost_variant(int argc, char** argv) {
  dr::PeerOptions options;
  options.launcher = argv[1];
  options.report_grace = 500ms;
  options.connect_deadline = argc > 6 ? std::chrono::milliseconds(std::stoi(argv[6])) : std::chrono::milliseconds(5s);
  // When the runner starts and when it refused to (the test's latency of a refused start).
  std::cout << std::fixed << "STARTED " << now_s() << std::endl;
  std::optional<dr::PeerRunner> made;
  try {
    made.emplace(options);
  } catch (const dr::ConfigError& e) {
    std::cout << std::fixed << "REFUSED " << now_s() << std::endl;
    throw;
  }
  dr::PeerRunner& runner = *made;
  dr::Job request;
  request.id = "probe/multihost";
  request.task = "peer_collectives_for";
  request.backend = argv[2];
  request.deadline = std::chrono::milliseconds(std::stoi(argv[5]));
  request.params = {{"iterations", std::stoi(argv[4])}, {"pause_ms", 10}};
  const double began = now_s();
  const dr::JobResult result = runner.run(request);
  std::cout << std::fixed << "RANK " << runner.rank() << " RETURNED_AFTER " << now_s() - began << std::endl;
  std::cout << "RANK " << runner.rank() << " SAW " << dr::to_string(result.status) << " " << result.blamed_rank << std::endl;
  if (!runner.is_reporter()) std::cout << "RANK " << runner.rank() << " HEARD " << result.diagnosis.substr(0, 600) << std::endl;
  if (runner.is_reporter()) {
    if (argc > 7) {
      for (int i = 0; i < 500 && dr::detail::teardown_signal() == 0; ++i) std::this_thread::sleep_for(10ms);
      std::cout << std::fixed << "RANK 0 HELD " << dr::detail::teardown_signal() << " " << now_s() << std::endl;
      std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(argv[7])));
    }
    std::cout << "VARIANT " << result.to_json().dump() << std::endl;
    std::cout << std::fixed << "RANK 0 REPORTED_AT " << now_s() << std::endl;  // the report is out (above)
  }
  const int code = result.status == dr::RunStatus::Hang ? 3 : result.status == dr::RunStatus::Crash ? 4
                 : result.status == dr::RunStatus::Completed ? 0 : 1;
  runner.finish(code);
  return runner.is_reporter() ? code : 0;
}

// launch_peer_probe <mpi|env> <backend> FAULT RANK PID_FILE: one job with the fault (a 2 s
// deadline), then ends the run as the CLI does: rank 0 prints the report and every rank calls
// finish() with the runner's code (3 hang, 4 crash, 1 otherwise), rank 0 returns it.
int run_fault_variant(char** argv) {
  dr::PeerOptions options;
  options.launcher = argv[1];
  options.report_grace = 2s;
  dr::PeerRunner runner(options);
  dr::Job request;
  request.id = std::string("probe/fault/") + argv[3];
  request.task = "fault_inject";
  request.backend = argv[2];
  request.deadline = 2s;
  request.params = {{"fault", argv[3]}, {"rank", std::stoi(argv[4])}, {"pid_file", argv[5]}};
  const dr::JobResult result = runner.run(request);
  if (runner.is_reporter()) std::cout << "VARIANT " << result.to_json().dump() << std::endl;
  const int code = result.status == dr::RunStatus::Hang ? 3 : result.status == dr::RunStatus::Crash ? 4
                 : result.status == dr::RunStatus::Completed ? 0 : 1;
  runner.finish(code);
  return runner.is_reporter() ? code : 0;
}

int main(int argc, char** argv) {
  if (argc >= 6 && argc <= 8 && std::string(argv[3]) == "multihost") {
    try {
      return run_multihost_variant(argc, argv);
    } catch (const std::exception& e) {
      std::cerr << "launch_peer_probe: " << e.what() << std::endl;
      return 1;
    }
  }
  if (argc == 6) {
    try {
      return run_fault_variant(argv);
    } catch (const std::exception& e) {
      std::cerr << "launch_peer_probe: " << e.what() << std::endl;
      return 1;
    }
  }
  if (argc != 3) {
    std::cerr << "usage: launch_peer_probe <mpi|env> <backend> [FAULT RANK PID_FILE]" << std::endl;
    return 2;
  }
  try {
    dr::PeerOptions options;
    options.launcher = argv[1];
    options.report_grace = 2s;
    dr::PeerRunner runner(options);
    int index = 0;
    auto run = [&](const std::string& task, std::chrono::milliseconds deadline) {
      dr::Job request;
      request.id = "probe/" + std::to_string(index++) + "/" + task;
      request.task = task;
      request.backend = argv[2];
      request.deadline = deadline;
      const dr::JobResult result = runner.run(request);
      std::cout << "RANK " << runner.rank() << " SAW " << dr::to_string(result.status) << " " << result.blamed_rank
                << std::endl;
      if (runner.is_reporter()) std::cout << "VARIANT " << result.to_json().dump() << std::endl;
    };
    run("peer_sum_of_ranks", 10s);
    // With the rendezvous up and a job done: which TCP ports this rank listens on.
    for (const auto& listener : tcp_listeners_of_this_process()) {
      std::cout << "RANK " << runner.rank() << " TCP_LISTEN " << listener << std::endl;
    }
    std::cout << "RANK " << runner.rank() << " LISTENERS_CHECKED" << std::endl;
    run("peer_every_rank_raises", 10s);
    run("peer_sum_of_ranks", 10s);  // an error does not stop the run
    run("peer_skip_second_collective", 3s);
    try {
      run("peer_sum_of_ranks", 10s);
      std::cout << "RANK " << runner.rank() << " RAN AFTER A HANG" << std::endl;
      return 1;
    } catch (const dr::ConfigError& e) {
      std::cout << "RANK " << runner.rank() << " STOPPED: " << e.what() << std::endl;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "launch_peer_probe: " << e.what() << std::endl;
    return 1;
  }
}
