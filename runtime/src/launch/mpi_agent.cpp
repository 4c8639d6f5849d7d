#include "mpi_agent.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <ATen/Parallel.h>

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "../comm/backend_factory.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/launchers.h"
#include "process.h"
#include "protocol.h"

namespace distmetrics::runtime::detail {

using namespace std::chrono_literals;

namespace {

// The start of the agent's errors: they are the mpi launcher's.
std::string mpi_says() { return launcher_error_prefix(LauncherId::Mpi); }

// One JSON message per line; false when the other end is gone, or does not read within `budget`.
bool send_to(LineChannel& channel, const nlohmann::json& message, std::chrono::milliseconds budget = 1s) {
  try {
    channel.send(message, Deadline::after(budget));
    return true;
  } catch (const ChannelError&) {
    return false;
  }
}

}  // namespace

nlohmann::json to_json(const AgentTask& task) {
  return {{"op", "run"}, {"job", to_json(task.job)}, {"prefix", task.prefix},
          {"ms", task.budget.count()}, {"world_size", task.world_size},
          {"local_rank", task.local_rank}, {"op_timeout_ms", task.op_timeout.count()},
          {"gloo_address", task.gloo_address}, {"socket", task.store.socket},
          {"host", task.store.host}, {"port", task.store.port}, {"secret", task.store.secret}};
}

AgentTask agent_task_from_json(const nlohmann::json& json) {
  AgentTask task;
  task.job = job_from_json(json.at("job"));
  task.prefix = json.at("prefix").get<std::string>();
  task.budget = std::chrono::milliseconds(json.at("ms").get<long>());
  task.world_size = json.at("world_size").get<int>();
  task.local_rank = json.at("local_rank").get<int>();
  task.op_timeout = std::chrono::milliseconds(json.at("op_timeout_ms").get<long>());
  task.gloo_address = json.value("gloo_address", "");
  task.store.socket = json.value("socket", "");
  task.store.host = json.value("host", "");
  task.store.port = json.value("port", -1);
  task.store.secret = json.value("secret", "");
  return task;
}

// ---- The rank's side ----

MpiAgent::MpiAgent(const Serve& serve, const Deadline& deadline) {
  int pair[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    throw ConfigError(mpi_says() + "cannot make a socket pair for the MPI agent: " + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pair[0]);
    ::close(pair[1]);
    throw ConfigError(mpi_says() + "cannot fork the MPI agent: " + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(pair[0]);
    // Dies with its rank (mpirun ends the processes it started, not this one).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::setpgid(0, 0);
    serve(pair[1]);
    ::_exit(1);  // a Serve must not return
  }
  ::close(pair[1]);
  ::setpgid(pid, pid);  // its own group: what a task forks there is ended with it
  pid_ = pid;
  channel_ = std::make_unique<LineChannel>(pair[0]);
  Reply hello = await(deadline);
  if (!hello.message) {
    end();
    throw ConfigError(mpi_says() + "the MPI agent of this process " +
                      (hello.status ? "ended (" + describe_wait_status(*hello.status) + ")" : std::string("did not answer")) +
                      " before MPI_Init finished (was this process started by mpirun?)");
  }
  if (hello.message->contains("error")) {
    end();
    throw ConfigError(mpi_says() + hello.message->at("error").get<std::string>());
  }
  hello_ = std::move(*hello.message);
}

MpiAgent::~MpiAgent() { end(); }

bool MpiAgent::send(const nlohmann::json& message, std::chrono::milliseconds budget) {
  return alive() && channel_ && send_to(*channel_, message, budget);
}

// The agent's next message, or how it ended or stopped, by `deadline`.
MpiAgent::Reply MpiAgent::await(const Deadline& deadline, const std::function<bool()>& stop) {
  Reply reply;
  while (pid_ > 0) {
    if ((reply.message = next())) return reply;
    int raw = 0;
    const pid_t done = ::waitpid(pid_, &raw, WNOHANG | WUNTRACED);
    if (done == pid_ && WIFSTOPPED(raw)) {
      reply.stop_signal = WSTOPSIG(raw);
    } else if (done == pid_) {
      channel_->read_available();
      status_ = raw;  // what it said before it ended comes first (below)
      pid_ = -pid_;   // reaped; its group may live on (end() ends it)
      break;
    }
    if (deadline.expired() || (stop && stop())) return reply;
    pollfd watch{channel_->fd(), POLLIN, 0};
    ::poll(&watch, 1, static_cast<int>(std::min<std::chrono::milliseconds>(deadline.remaining(), 20ms).count()));
    channel_->read_available();
  }
  // Already reaped: a message it left, or its end.
  reply.message = next();
  if (!reply.message) reply.status = status_.value_or(0);
  return reply;
}

// The next whole message the agent sent, if any; an unreadable one is said as an error.
std::optional<nlohmann::json> MpiAgent::next() {
  if (!channel_) return std::nullopt;
  try {
    return channel_->next();
  } catch (const ChannelError&) {
    return nlohmann::json{{"error", "the MPI agent sent an unreadable message"}};
  }
}

std::string MpiAgent::broadcast(const std::string& text, const Deadline& deadline) {
  const std::string rank = hello_.contains("rank") ? std::to_string(hello_["rank"].get<int>()) : "?";
  if (!send({{"op", "broadcast"}, {"text", text}, {"ms", deadline.remaining().count()}})) {
    throw ConfigError(mpi_says() + "rank " + rank + ": the MPI agent is gone");
  }
  const Reply reply = await(Deadline::after(deadline.remaining() + 1s));
  if (!reply.message) {
    throw ConfigError(mpi_says() + "rank " + rank + ": the MPI broadcast of the rendezvous " +
                      (reply.status ? "ended the MPI agent (" + describe_wait_status(*reply.status) + ")"
                                    : std::string("did not finish in time (did every rank start?)")));
  }
  if (reply.message->contains("error")) throw ConfigError(reply.message->at("error").get<std::string>());
  return reply.message->at("text").get<std::string>();
}

std::optional<TaskEnd> MpiAgent::run(const AgentTask& task, const Deadline& until, const std::function<bool()>& stop) {
  if (!send(to_json(task))) return std::nullopt;
  Reply reply = await(until, stop);
  // An earlier job's outcome that came after its wait is not this one's.
  while (reply.message && reply.message->value("job", "") != task.prefix) reply = await(until, stop);
  TaskEnd end;
  if (reply.message) {
    holds_variant_ = true;
    try {
      end.outcome = outcome_from_json(reply.message->at("outcome"));
    } catch (const std::exception&) {
      // not an outcome: said as stuck, with its progress
    }
    return end;
  }
  end.wait_status = reply.status;
  end.stop_signal = reply.stop_signal;
  if (reply.status) this->end();  // what the task forked goes with it
  return end;
}

void MpiAgent::release() {
  if (holds_variant_ && alive()) send({{"op", "release"}});
  holds_variant_ = false;
}

void MpiAgent::stop(std::chrono::milliseconds grace) {
  if (pid_ == 0) return;
  if (send({{"op", "finalize"}})) {
    const Deadline deadline = Deadline::after(grace);
    while (alive() && !deadline.expired()) {
      const Reply reply = await(deadline);
      if (reply.status) break;
    }
  }
  end();
}

void MpiAgent::end() {
  const pid_t group = pid_ > 0 ? pid_ : -pid_;
  if (group > 0) end_process_groups({group}, 0ms);  // not asked: it may be stuck in a collective
  channel_.reset();
  pid_ = 0;
}

// ---- The agent's side ----

[[noreturn]] void serve_mpi_agent(int fd, std::uint64_t rank_memory_bytes) {
  nlohmann::json hello;
  try {
    mpi_runtime::ensure_initialized();
    hello = {{"rank", mpi_runtime::world_rank()}, {"size", mpi_runtime::world_size()}, {"on_node", mpi_runtime::ranks_on_this_node()}};
  } catch (const std::exception& e) {
    hello = {{"error", e.what()}};
  }
  // Open MPI's fatal-signal handlers would print and may talk to mpirun: the agent dies of
  // its signal, and its rank reports it.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM}) ::signal(sig, SIG_DFL);
  LineChannel channel(fd);
  send_to(channel, hello);
  if (hello.contains("error")) ::_exit(1);
  const int rank = hello["rank"].get<int>();
  at::set_num_threads(1);  // the ranks share the machine's cores, as pool workers do
  struct Held {  // the last job's communicator and store, until every rank has the report
    c10::intrusive_ptr<c10d::Store> store;
    LocalRun local;
  };
  std::unique_ptr<Held> held;
  // Each wait is bounded; its rank's end (end of file, or PR_SET_PDEATHSIG) ends the loop.
  while (true) {
    nlohmann::json request;
    try {
      auto message = channel.receive(Deadline::after(std::chrono::minutes(10)));
      if (!message) continue;
      request = std::move(*message);
    } catch (const ChannelError&) {
      break;  // its rank is gone, or sent what is not a message
    }
    const std::string op = request.value("op", "");
    if (op == "broadcast") {
      try {
        const auto deadline = Deadline::after(std::chrono::milliseconds(request.at("ms").get<long>()));
        send_to(channel, {{"text", mpi_runtime::broadcast_text(request.at("text").get<std::string>(), 0, deadline)}});
      } catch (const std::exception& e) {
        send_to(channel, {{"error", mpi_says() + "rank " + std::to_string(rank) + ": " + short_what(e)}});
      }
    } else if (op == "run") {
      held.reset();
      held = std::make_unique<Held>();
      try {
        const AgentTask task = agent_task_from_json(request);
        const Deadline deadline = Deadline::after(task.budget);
        CommSpec spec;
        spec.backend = task.job.backend;
        spec.comm_device = task.job.comm_device;
        spec.rank = rank;
        spec.world_size = task.world_size;
        spec.local_rank = task.local_rank;
        spec.op_timeout = task.op_timeout;
        spec.gloo_address = task.gloo_address;
        held->store = c10::make_intrusive<c10d::PrefixStore>(task.prefix, task.store.connect(deadline));
        auto group_store = c10::make_intrusive<c10d::PrefixStore>("group/", held->store);
        {
          const TaskMemoryLimit limit(rank_memory_bytes);
          held->local = run_task_here(task.job, spec, group_store, deadline, store_task_hooks(held->store, rank));
        }
        send_to(channel, {{"job", task.prefix}, {"outcome", to_json(held->local.outcome)}}, 5s);
      } catch (const std::exception& e) {
        RankOutcome failed;
        failed.rank = rank;
        failed.state = RankState::Raised;
        failed.error_type = "ConfigError";
        failed.error = "rank " + std::to_string(rank) + ": the MPI agent could not run the task: " + short_what(e);
        send_to(channel, {{"job", request.value("prefix", "")}, {"outcome", to_json(failed)}}, 5s);
      }
    } else if (op == "release") {
      held.reset();
    } else if (op == "finalize") {
      held.reset();
      mpi_runtime::finalize();
      ::_exit(0);
    }
  }
  ::_exit(0);  // its rank is gone; no static destructors (MPI_Finalize would wait for peers)
}

}  // namespace distmetrics::runtime::detail
