// The rank's side of its MPI agent (mpi_agent.h), against agent processes that speak the agent's
// lines without MPI: the hello, an agent that fails or ends before it, the broadcast, a task's
// outcome tagged with its job (an earlier job's late one is not taken), an agent that
// crashes or stops itself in a task. The agent with MPI itself runs under mpirun in
// launch_peer_tests.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "../src/launch/mpi_agent.h"
#include "../src/launch/process.h"
#include "../src/launch/protocol.h"
#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime::detail {
namespace {

using namespace std::chrono_literals;

bool gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

// An agent without MPI: says hello as rank 1 of 2, then answers each request as `on_run` says
// for "run" and echoes broadcasts.
MpiAgent::Serve agent_that(std::function<void(LineChannel&, const nlohmann::json&)> on_run) {
  return [on_run](int fd) {
    LineChannel channel(fd);
    channel.send({{"rank", 1}, {"size", 2}, {"on_node", 2}}, Deadline::after(5s));
    for (int i = 0; i < 100; ++i) {
      std::optional<nlohmann::json> request;
      try {
        request = channel.receive(Deadline::after(30s));
      } catch (const ChannelError&) {
        ::_exit(0);  // the rank is gone
      }
      if (!request) continue;
      const std::string op = request->value("op", "");
      if (op == "broadcast") channel.send({{"text", "heard " + request->at("text").get<std::string>()}}, Deadline::after(5s));
      if (op == "run") on_run(channel, *request);
      if (op == "finalize") ::_exit(0);
    }
    ::_exit(0);
  };
}

std::string start_error(const MpiAgent::Serve& serve) {
  try {
    MpiAgent agent(serve, Deadline::after(5s));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(started)";
}

AgentTask task_of(const std::string& prefix) {
  AgentTask task;
  task.job.id = "sum/mpi/ws2";
  task.job.task = "peer_sum_of_ranks";
  task.job.backend = "mpi";
  task.prefix = prefix;
  task.budget = 5s;
  task.world_size = 2;
  task.local_rank = 1;
  task.op_timeout = 4s;
  task.store.socket = "/tmp/distmetrics-peer-x/store.sock";
  return task;
}

TEST(MpiAgent, ATaskTravelsWhole) {
  AgentTask task = task_of("v7/");
  task.store = StoreAddress{"", "10.77.0.1", 29500, "s3cret"};
  task.gloo_address = "10.77.0.2";
  const AgentTask back = agent_task_from_json(to_json(task));
  EXPECT_EQ(back.job.id, "sum/mpi/ws2");
  EXPECT_EQ(back.job.task, "peer_sum_of_ranks");
  EXPECT_EQ(back.job.backend, "mpi");
  EXPECT_EQ(back.prefix, "v7/");
  EXPECT_EQ(back.budget, 5000ms);
  EXPECT_EQ(back.world_size, 2);
  EXPECT_EQ(back.local_rank, 1);
  EXPECT_EQ(back.op_timeout, 4000ms);
  EXPECT_EQ(back.gloo_address, "10.77.0.2");
  EXPECT_EQ(back.store.socket, "");
  EXPECT_EQ(back.store.host, "10.77.0.1");
  EXPECT_EQ(back.store.port, 29500);
  EXPECT_EQ(back.store.secret, "s3cret");
  EXPECT_EQ(to_json(task).at("op"), "run");
}

TEST(MpiAgent, AnAgentThatFailsOrEndsBeforeItsHelloIsAClearError) {
  EXPECT_EQ(start_error([](int fd) {
              LineChannel channel(fd);
              channel.send({{"error", "MPI_Init: no mpirun here"}}, Deadline::after(5s));
              ::_exit(1);
            }),
            "mpi launcher: MPI_Init: no mpirun here");
  EXPECT_EQ(start_error([](int) { ::_exit(1); }),
            "mpi launcher: the MPI agent of this process ended (exit status 1) before MPI_Init finished "
            "(was this process started by mpirun?)");
}

TEST(MpiAgent, HelloBroadcastAndTheOutcomeOfThisVariant) {
  MpiAgent agent(agent_that([](LineChannel& channel, const nlohmann::json& request) {
                   RankOutcome late;  // an earlier job's, after its wait
                   late.rank = 1;
                   late.result = {{"from", "v1/"}};
                   channel.send({{"job", "v1/"}, {"outcome", to_json(late)}}, Deadline::after(5s));
                   RankOutcome now;
                   now.rank = 1;
                   now.result = {{"from", request.at("prefix")}};
                   channel.send({{"job", request.at("prefix")}, {"outcome", to_json(now)}}, Deadline::after(5s));
                 }),
                 Deadline::after(5s));
  EXPECT_EQ(agent.hello().at("rank"), 1);
  EXPECT_EQ(agent.hello().at("size"), 2);
  EXPECT_TRUE(agent.alive());
  EXPECT_EQ(agent.broadcast("10.77.0.1:29500", Deadline::after(5s)), "heard 10.77.0.1:29500");
  const auto end = agent.run(task_of("v2/"), Deadline::after(5s));
  ASSERT_TRUE(end.has_value());
  ASSERT_TRUE(end->outcome.has_value());
  EXPECT_EQ(end->outcome->result.at("from"), "v2/");
  const pid_t pid = agent.pid();
  agent.stop(2s);  // finalize: it leaves
  EXPECT_FALSE(agent.alive());
  EXPECT_TRUE(gone(pid));
}

TEST(MpiAgent, AnAgentThatCrashesInATaskIsReapedAndEnded) {
  MpiAgent agent(agent_that([](LineChannel&, const nlohmann::json&) { ::raise(SIGSEGV); }), Deadline::after(5s));
  const pid_t pid = agent.pid();
  const auto end = agent.run(task_of("v1/"), Deadline::after(5s));
  ASSERT_TRUE(end.has_value());
  EXPECT_FALSE(end->outcome.has_value());
  ASSERT_TRUE(end->wait_status.has_value());
  EXPECT_EQ(describe_wait_status(*end->wait_status), "killed by signal 11 (SIGSEGV)");
  EXPECT_FALSE(agent.alive());
  EXPECT_TRUE(gone(pid));
  // Gone: nothing more can be asked of it.
  EXPECT_FALSE(agent.run(task_of("v2/"), Deadline::after(1s)).has_value());
  try {
    agent.broadcast("x", Deadline::after(1s));
    ADD_FAILURE() << "a broadcast through an agent that is gone";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "mpi launcher: rank 1: the MPI agent is gone");
  }
}

TEST(MpiAgent, AnAgentThatStopsItselfIsSaidStoppedAndEndedByTheRank) {
  MpiAgent agent(agent_that([](LineChannel&, const nlohmann::json&) { ::raise(SIGSTOP); }), Deadline::after(5s));
  const pid_t pid = agent.pid();
  const auto end = agent.run(task_of("v1/"), Deadline::after(1s));
  ASSERT_TRUE(end.has_value());
  EXPECT_FALSE(end->outcome.has_value());
  EXPECT_FALSE(end->wait_status.has_value());
  EXPECT_EQ(end->stop_signal, SIGSTOP);
  EXPECT_TRUE(agent.alive());
  agent.end();
  EXPECT_TRUE(gone(pid));
}

}  // namespace
}  // namespace distmetrics::runtime::detail
