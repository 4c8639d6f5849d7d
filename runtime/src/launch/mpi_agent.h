// The MPI agent of a rank under mpirun (launcher mpi). mpirun starts the rank; before MPI_Init
// the rank forks its agent, which becomes the MPI rank (it inherits Open MPI's environment and
// registers with mpirun itself), while the rank never touches MPI. The agent serves MPI for its
// rank: the rendezvous broadcast and the tasks of backends whose descriptor says MpiAgent (MPI
// cannot be used in a child forked after MPI_Init). A task that crashes or exits takes only the
// agent: the rank sees its wait status, reports it and stays up. They talk in LineChannel lines
// (wire.h) over a socket pair; the agent dies with its rank. See docs/design.md, "Crashes under
// mpirun".
#pragma once

#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "distmetrics/runtime/deadline.h"
#include "distmetrics/runtime/job.h"
#include "peer_store.h"
#include "peer_task.h"
#include "wire.h"

namespace distmetrics::runtime::detail {

// One job's task, as a rank sends it to its agent.
struct AgentTask {
  Job job;
  std::string prefix;                 // the job's keys in the store ("v3/")
  std::chrono::milliseconds budget{0};  // what is left of the job's deadline
  int world_size = 1;
  int local_rank = 0;
  std::chrono::milliseconds op_timeout{0};
  std::string gloo_address;
  StoreAddress store;  // the agent opens its own connection
};
nlohmann::json to_json(const AgentTask& task);
AgentTask agent_task_from_json(const nlohmann::json& json);

class MpiAgent {
 public:
  // What the agent process runs on the socket `fd`: serve_mpi_agent in a rank. It must not return.
  using Serve = std::function<void(int fd)>;
  // Forks the agent (its own process group: what its tasks fork is ended with it; it dies with
  // this process) and waits for its hello by the deadline: {"rank", "size", "on_node"} of MPI,
  // or {"error"}. ConfigError with why when it ends, errs or is silent.
  MpiAgent(const Serve& serve, const Deadline& deadline);
  ~MpiAgent();  // end()
  MpiAgent(const MpiAgent&) = delete;
  MpiAgent& operator=(const MpiAgent&) = delete;

  const nlohmann::json& hello() const { return hello_; }
  bool alive() const { return pid_ > 0; }
  pid_t pid() const { return pid_ > 0 ? pid_ : 0; }

  // Rank 0's text, on every rank, through MPI. ConfigError when the agent is gone, errs or does
  // not answer by the deadline (plus a second).
  std::string broadcast(const std::string& text, const Deadline& deadline);
  // Runs the task: what the agent sent for this job, or how it ended (then it is ended with
  // what the task forked) or stopped, by `until`; nullopt when the agent is gone or does not
  // read the request. An agent that answered keeps the job's communicator until release().
  // `stop` (asked every 20 ms at most) ends the wait early, as `until` would: the task goes on
  // in the agent, and its late outcome is not taken for a later job's.
  std::optional<TaskEnd> run(const AgentTask& task, const Deadline& until, const std::function<bool()>& stop = {});
  // The agent may drop the last job's communicator (every rank has the report).
  void release();
  // The agent finalises MPI and leaves, within `grace`; then it is ended.
  void stop(std::chrono::milliseconds grace);
  // Ends the agent's process group (it, and whatever its tasks forked) and reaps it: not asked,
  // it may be stuck in a collective.
  void end();

 private:
  struct Reply {
    std::optional<nlohmann::json> message;
    std::optional<int> status;  // it ended (reaped)
    int stop_signal = 0;        // it stopped itself
  };
  Reply await(const Deadline& deadline, const std::function<bool()>& stop = {});
  std::optional<nlohmann::json> next();
  bool send(const nlohmann::json& message, std::chrono::milliseconds budget = std::chrono::seconds(1));

  // Its pid (negative once reaped, 0 once ended), its socket, how it ended.
  pid_t pid_ = 0;
  std::unique_ptr<LineChannel> channel_;
  std::optional<int> status_;
  nlohmann::json hello_;
  bool holds_variant_ = false;
};

// The agent's side (in the forked agent): MPI_Init, the hello, then the rank's requests
// ("broadcast", "run", "release", "finalize") until its rank is gone. Each task runs under the
// rank's memory limit. Never returns.
[[noreturn]] void serve_mpi_agent(int fd, std::uint64_t rank_memory_bytes);

}  // namespace distmetrics::runtime::detail
