// Variants on ranks started by mpirun or by a torchrun-style launcher: every rank runs the task
// (in a child per variant on gloo, in its MPI agent on mpi, else itself), rank 0 gathers the
// outcomes through the store and publishes the report.
#include "distmetrics/runtime/peer_runner.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <ATen/Parallel.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <optional>
#include <cstdlib>
#include <thread>

#include "../comm/backend_factory.h"
#include "diagnosis.h"
#include "pool_store.h"
#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/errors.h"
#include "process.h"
#include "protocol.h"
#include "task_runner.h"

namespace distmetrics::runtime {

using namespace std::chrono_literals;

std::string detect_launcher() {
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) return "mpi";
  if (std::getenv("WORLD_SIZE") && std::getenv("RANK")) return "env";
  return "";
}

namespace {

constexpr const char* kEnvVariables = "RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT";

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

int env_int(const std::string& launcher, const char* name, std::optional<int> fallback = std::nullopt) {
  const auto text = env(name);
  if (!text) {
    if (fallback) return *fallback;
    throw ConfigError(launcher + " launcher: " + name + " is not set (a torchrun-style launcher sets " + kEnvVariables + ")");
  }
  try {
    size_t used = 0;
    const int value = std::stoi(*text, &used);
    if (used == text->size() && value >= 0) return value;
  } catch (const std::exception&) {
  }
  throw ConfigError(launcher + " launcher: " + name + "=" + *text + " is not a non-negative integer");
}

std::vector<std::uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }
std::string text_of(const std::vector<std::uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

std::string host_name() {
  char name[256] = {0};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// Polls the store until every key exists or the deadline passes.
bool wait_for_keys(c10d::Store& store, const std::vector<std::string>& keys, const Deadline& deadline) {
  auto pause = 1ms;
  while (true) {
    try {
      if (store.check(keys)) return true;
    } catch (const std::exception&) {
      // The store did not answer (bounded by its timeout): cut off, or gone; the deadline decides.
    }
    if (deadline.expired()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(pause, deadline.remaining()));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

// Writes where this rank is to the store, so that rank 0 can say where a rank that never
// reported got stuck.
class StoreProgress final : public CollectiveObserver {
 public:
  StoreProgress(c10::intrusive_ptr<c10d::Store> store, int rank) : store_(std::move(store)), key_("progress/" + std::to_string(rank)) {}
  void on_enter(const CollectiveRecord& record) override {
    entered_.push_back(detail::to_json(record));
    publish(true);
  }
  void on_exit(const CollectiveRecord&, bool) override { publish(false); }

 private:
  void publish(bool open) {
    try {
      store_->set(key_, bytes_of(nlohmann::json({{"trace", entered_}, {"open", open}}).dump()));
    } catch (const std::exception&) {
      // Progress is for the diagnosis only; the outcome still travels.
    }
  }
  c10::intrusive_ptr<c10d::Store> store_;
  std::string key_;
  nlohmann::json entered_ = nlohmann::json::array();
};


// Where a variant's task runs is the backend's (backends.cpp, peer_isolation): in a child process
// of the rank forked per variant (a child can crash, exit, stop or loop without taking the rank
// with it: the rank reports how it ended, ends its process group with whatever it forked and goes
// on to the report); in the MPI agent under mpirun (MPI cannot be used in a child forked after
// MPI_Init); or in the rank itself (CUDA does not survive a fork).
bool task_runs_in_child(const Job& request) {
  return peer_task_isolation(request.backend, request.comm_device) == TaskIsolation::ForkedChild;
}
bool task_runs_in_agent(const std::string& launcher, const Job& request) {
  return launcher == "mpi" && peer_task_isolation(request.backend, request.comm_device) == TaskIsolation::MpiAgent;
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Reads what is there without blocking; false at end of file.
bool drain(int fd, std::string& into) {
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      into.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0;  // EAGAIN: open, nothing more now; 0: end of file
  }
}
// Between a rank and its MPI agent: one JSON message per line over a socket pair (LineChannel,
// wire.h). false when the agent (or the rank) is gone, or does not read within a second.
bool send_to(detail::LineChannel* channel, const nlohmann::json& message, std::chrono::milliseconds budget = 1s) {
  if (channel == nullptr) return false;
  try {
    channel->send(message, Deadline::after(budget));
    return true;
  } catch (const detail::ChannelError&) {
    return false;
  }
}

// While a task runs (in a gloo task's child, in the MPI agent): the rank's memory limit, as a
// local pool's worker sets it. The soft limit only, put back afterwards: the agent's own MPI (its
// start, the rendezvous broadcast) needs more than a small limit leaves. 0: none.
class TaskMemoryLimit {
 public:
  explicit TaskMemoryLimit(std::uint64_t bytes) : before_(detail::limit_rank_memory(bytes, /*for_life=*/false)) {}
  ~TaskMemoryLimit() {
    if (before_) detail::restore_rank_memory(*before_);
  }
  TaskMemoryLimit(const TaskMemoryLimit&) = delete;
  TaskMemoryLimit& operator=(const TaskMemoryLimit&) = delete;

 private:
  std::optional<rlimit> before_;
};
}  // namespace

class PeerRunner::Impl {
 public:
  explicit Impl(PeerOptions options) : options_(std::move(options)) {
    try {
      start();
      // From now on this process's own store calls are short (set, get, check: waits poll), so each
      // is bounded by the report grace: a store cut off by a partition costs a grace, not a
      // connect deadline, per call.
      store_->setTimeout(std::max<std::chrono::milliseconds>(options_.report_grace, 100ms));
    } catch (...) {
      end_agent();  // no MPI agent outlives a runner that did not start
      throw;
    }
  }

  void start() {
    std::string host;
    int port = -1;
    if (options_.launcher == "mpi") {
      if (!detail::mpi_runtime::compiled()) throw ConfigError("mpi launcher: this build has no Open MPI");
      const nlohmann::json hello = start_agent(Deadline::after(options_.connect_deadline));
      rank_ = hello.at("rank").get<int>();
      world_size_ = hello.at("size").get<int>();
      ranks_on_node_ = hello.at("on_node").get<int>();
      local_rank_ = env_int("mpi", "OMPI_COMM_WORLD_LOCAL_RANK", 0);
      local_world_size_ = env_int("mpi", "OMPI_COMM_WORLD_LOCAL_SIZE", world_size_);
      if (env("MASTER_ADDR") && env("MASTER_PORT")) {
        host = *env("MASTER_ADDR");
        port = env_int("mpi", "MASTER_PORT");
      }
    } else if (options_.launcher == "env") {
      rank_ = env_int("env", "RANK");
      world_size_ = env_int("env", "WORLD_SIZE");
      local_rank_ = env_int("env", "LOCAL_RANK", 0);
      local_world_size_ = env_int("env", "LOCAL_WORLD_SIZE", world_size_);
      host = env("MASTER_ADDR").value_or("");
      if (host.empty()) throw ConfigError(std::string("env launcher: MASTER_ADDR is not set (a torchrun-style launcher sets ") + kEnvVariables + ")");
      port = env_int("env", "MASTER_PORT");
      if (port == 0 || port > 65535) throw ConfigError("env launcher: MASTER_PORT must be a port in 1..65535");
    } else {
      throw ConfigError("peer runner: launcher must be \"mpi\" or \"env\", got \"" + options_.launcher + "\"");
    }
    if (world_size_ < 1 || rank_ >= world_size_) {
      throw ConfigError(options_.launcher + " launcher: rank " + std::to_string(rank_) + " is not in a world of " +
                        std::to_string(world_size_));
    }
    // Tasks run in child processes of this rank (task_runs_in_child): whatever they fork comes
    // back to this process to be reaped when they die.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    // Every rank on this host: the rendezvous is a private Unix-socket store (pool_store.h), and no
    // port is opened. Each launcher says it the same way on every rank, so that all agree.
    bool one_host = false;
    if (options_.launcher == "mpi") {
      one_host = ranks_on_node_ == world_size_;
    } else {
      one_host = is_loopback(host) || (host == host_name() && env("LOCAL_WORLD_SIZE") && local_world_size_ == world_size_);
    }
    gloo_address_ = one_host || local_world_size_ == world_size_ ? "127.0.0.1" : "";  // several hosts: GLOO_SOCKET_IFNAME, or this host's name

    const Deadline deadline = Deadline::after(options_.connect_deadline);
    if (one_host) {
      connect_privately(port, deadline);
    } else {
      connect_over_network(host, port, deadline);
    }
    // Every rank checks in; rank 0 waits for all of them, so a wrong WORLD_SIZE is caught here.
    // Which host each rank is on, for the reports (a blamed rank is named with its host).
    store_->set("host/" + std::to_string(rank_), bytes_of(host_name()));
    store_->set("joined/" + std::to_string(rank_), bytes_of(std::to_string(world_size_)));
    if (rank_ != 0) {
      // Rank 0's word on the start: "ok", or why the run cannot start (a rank with another WORLD_SIZE).
      if (!wait_for_keys(*store_, {"start"}, deadline)) {
        throw ConfigError(options_.launcher + " launcher: rank " + std::to_string(rank_) + ": rank 0 did not start the run within " +
                          std::to_string(options_.connect_deadline.count()) + " ms (is every rank started, with the same WORLD_SIZE?)");
      }
      const std::string word = text_of(store_->get("start"));
      if (word != "ok") {
        store_->add("left", 1);
        throw ConfigError(word);
      }
    } else {
      try {
        check_that_every_rank_joined(deadline);
      } catch (const ConfigError& e) {
        set_quietly(*store_, "start", e.what());
        // The ranks that joined read why before the store goes (bounded).
        int joined = 0;
        for (int r = 1; r < world_size_; ++r) joined += store_->check({"joined/" + std::to_string(r)}) ? 1 : 0;
        const Deadline read = Deadline::after(options_.report_grace);
        while (store_->add("left", 0) < joined && !read.expired()) std::this_thread::sleep_for(5ms);
        throw;
      }
      store_->set("start", bytes_of("ok"));
    }
  }

  void check_that_every_rank_joined(const Deadline& deadline) {
    {
      std::vector<std::string> keys;
      for (int r = 0; r < world_size_; ++r) keys.push_back("joined/" + std::to_string(r));
      if (!wait_for_keys(*store_, keys, deadline)) {
        std::string missing;
        for (int r = 0; r < world_size_; ++r) {
          if (!store_->check({keys[r]})) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
        throw ConfigError(options_.launcher + " launcher: not every one of the " + std::to_string(world_size_) +
                          " ranks joined within " + std::to_string(options_.connect_deadline.count()) +
                          " ms (missing: rank " + missing + "; check WORLD_SIZE, MASTER_ADDR and MASTER_PORT on them)");
      }
      for (int r = 0; r < world_size_; ++r) {
        const std::string said = text_of(store_->get(keys[r]));
        if (said != std::to_string(world_size_)) {
          throw ConfigError(options_.launcher + " launcher: rank " + std::to_string(r) + " was started with a world of " +
                            said + " ranks, rank 0 with " + std::to_string(world_size_) + ": start every rank with the same WORLD_SIZE");
        }
        hosts_.push_back(text_of(store_->get("host/" + std::to_string(r))));
      }
    }
  }

  // Several hosts: rank 0 serves the project's store (pool_store.h) on the rendezvous address
  // alone, not on every interface (LibTorch 1.13's TCPStore cannot bind one address), and admits
  // only connections that show the run's secret. env: MASTER_ADDR:MASTER_PORT and the secret
  // from DISTMETRICS_RUN_SECRET (the same on every rank; never argv). mpi: with MASTER_ADDR and
  // MASTER_PORT there, else this host's address (GLOO_SOCKET_IFNAME's interface, else its first
  // interface that is up and not loopback) on a free port; the address, port and a fresh secret
  // (DISTMETRICS_RUN_SECRET when set) go to the other ranks through MPI.
  void connect_over_network(std::string host, int port, const Deadline& deadline) {
    std::string secret = env("DISTMETRICS_RUN_SECRET").value_or("");
    if (options_.launcher == "env" && secret.empty()) {
      throw ConfigError(
          "env launcher: ranks on several hosts need the run's secret: set DISTMETRICS_RUN_SECRET to the same random "
          "value on every rank (e.g. export DISTMETRICS_RUN_SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')); "
          "rank 0's rendezvous store refuses connections without it");
    }
    if (options_.launcher == "mpi") {
      std::string announced;
      if (rank_ == 0) {
        try {
          if (secret.empty()) secret = detail::random_secret();
          if (host.empty()) host = this_host_address();
          private_host_ = std::make_unique<detail::PoolStoreHost>(host, static_cast<std::uint16_t>(std::max(port, 0)), secret);
          announced = nlohmann::json({{"host", host}, {"port", private_host_->port()}, {"secret", secret}}).dump();
        } catch (const std::exception& e) {
          announced = "!" + detail::short_what(e);  // the others fail with rank 0's reason, not a timeout
        }
      }
      announced = agent_broadcast(announced, deadline);
      if (!announced.empty() && announced[0] == '!') {
        throw ConfigError("mpi launcher: rank 0 could not start the rendezvous store: " + announced.substr(1));
      }
      const auto where = nlohmann::json::parse(announced);
      host = where.at("host").get<std::string>();
      port = where.at("port").get<int>();
      secret = where.at("secret").get<std::string>();
    } else if (rank_ == 0) {
      try {
        private_host_ = std::make_unique<detail::PoolStoreHost>(host, static_cast<std::uint16_t>(port), secret);
      } catch (const std::exception& e) {
        throw ConfigError("env launcher: rank 0 could not host the rendezvous store at MASTER_ADDR=" + host +
                          " MASTER_PORT=" + std::to_string(port) + ": " + detail::short_what(e) +
                          " (rank 0 must run on the host MASTER_ADDR names)");
      }
    }
    store_host_ = host;
    store_port_ = port;
    store_secret_ = secret;
    c10::intrusive_ptr<detail::PoolStoreClient> client;
    try {
      client = detail::connect_to_network_store(host, static_cast<std::uint16_t>(port), secret, deadline,
                                                options_.connect_deadline, rank_);
    } catch (const ConfigError& e) {
      throw ConfigError(options_.launcher + " launcher: rank " + std::to_string(rank_) + ": " + e.what());
    }
    // Gloo binds its pairs to the address that reaches rank 0, unless GLOO_SOCKET_IFNAME says otherwise.
    if (!env("GLOO_SOCKET_IFNAME")) gloo_address_ = client->local_address();
    store_ = client;
  }

  static std::string this_host_address() {
    if (auto name = env("GLOO_SOCKET_IFNAME")) {
      const std::string address = detail::interface_address(*name);
      if (address.empty()) throw ConfigError("GLOO_SOCKET_IFNAME=" + *name + ": this host has no IPv4 address on it");
      return address;
    }
    const std::string address = detail::interface_address("");
    return address.empty() ? host_name() : address;
  }

  // Every rank on this host: rank 0 serves the store at a Unix socket in a private 0700 folder
  // (checked by peer credentials); mpi sends its path to the others with MPI, env derives it
  // from MASTER_PORT on every rank. Nothing listens on a network port.
  void connect_privately(int port, const Deadline& deadline) {
    std::string path;
    if (options_.launcher == "mpi") {
      std::string announced;
      if (rank_ == 0) {
        try {
          // In mpirun's session folder when there is one: mpirun removes it whatever happens to
          // rank 0 (a crash, MPI_Abort), as it does Open MPI's shared memory.
          private_host_ = std::make_unique<detail::PoolStoreHost>("", env("OMPI_MCA_orte_jobfam_session_dir").value_or(""));
          announced = private_host_->socket_path();
        } catch (const std::exception& e) {
          announced = "!" + detail::short_what(e);  // the others fail with rank 0's reason, not a timeout
        }
      }
      announced = agent_broadcast(announced, deadline);
      if (!announced.empty() && announced[0] == '!') {
        throw ConfigError("mpi launcher: rank 0 could not start the private rendezvous: " + announced.substr(1));
      }
      path = announced;
    } else {
      const std::string folder = detail::env_launch_store_folder(port);
      if (rank_ == 0) private_host_ = std::make_unique<detail::PoolStoreHost>(folder);
      path = folder + "/store.sock";
    }
    try {
      store_ = detail::connect_to_private_store(path, deadline, options_.connect_deadline);
    } catch (const ConfigError& e) {
      throw ConfigError(options_.launcher + " launcher: rank " + std::to_string(rank_) + ": " + e.what());
    }
    store_socket_ = path;
  }

  // The store for a task's child process: its own connection, bounded by the variant's deadline.
  c10::intrusive_ptr<c10d::Store> connect_child_store(const Deadline& deadline) {
    const auto timeout = std::max<std::chrono::milliseconds>(deadline.remaining(), 1ms);
    if (!store_socket_.empty()) return detail::connect_to_private_store(store_socket_, deadline, timeout);
    return detail::connect_to_network_store(store_host_, static_cast<std::uint16_t>(store_port_), store_secret_, deadline,
                                            timeout);
  }

  // ---- The MPI agent (launcher mpi) ----
  // mpirun starts this process; before MPI_Init it forks the agent, which becomes the MPI rank
  // (it inherits Open MPI's environment and registers with mpirun itself), while this process
  // never touches MPI. The agent serves MPI for this process: the rendezvous broadcast and the
  // mpi backend's tasks. A task that crashes or exits takes only the agent: this process sees
  // its wait status, reports it as its rank's outcome through the store and stays up, so rank 0
  // reports, and mpirun (which only watches the processes it started) keeps the job until
  // finish() ends it with the runner's exit code. See docs/design.md, "Crashes under mpirun".
  nlohmann::json start_agent(const Deadline& deadline) {
    int pair[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      throw ConfigError(std::string("mpi launcher: cannot make a socket pair for the MPI agent: ") + std::strerror(errno));
    }
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(pair[0]);
      ::close(pair[1]);
      throw ConfigError(std::string("mpi launcher: cannot fork the MPI agent: ") + std::strerror(errno));
    }
    if (pid == 0) {
      ::close(pair[0]);
      agent_main(parent, pair[1]);
    }
    ::close(pair[1]);
    ::setpgid(pid, pid);  // its own group: what a task forks there is ended with it
    agent_pid_ = pid;
    agent_channel_ = std::make_unique<detail::LineChannel>(pair[0]);
    AgentReply hello = await_agent(deadline);
    if (!hello.message) {
      end_agent();
      throw ConfigError("mpi launcher: the MPI agent of this process " +
                        (hello.status ? "ended (" + detail::describe_wait_status(*hello.status) + ")" : std::string("did not answer")) +
                        " before MPI_Init finished (was this process started by mpirun?)");
    }
    if (hello.message->contains("error")) {
      end_agent();
      throw ConfigError("mpi launcher: " + hello.message->at("error").get<std::string>());
    }
    return *hello.message;
  }

  struct AgentReply {
    std::optional<nlohmann::json> message;
    std::optional<int> status;  // it ended (reaped)
    int stop_signal = 0;        // it stopped itself
  };

  // The agent's next message, or how it ended or stopped, by `deadline`.
  AgentReply await_agent(const Deadline& deadline) {
    AgentReply reply;
    while (agent_pid_ > 0) {
      if ((reply.message = next_from_agent())) return reply;
      int raw = 0;
      const pid_t done = ::waitpid(agent_pid_, &raw, WNOHANG | WUNTRACED);
      if (done == agent_pid_ && WIFSTOPPED(raw)) {
        reply.stop_signal = WSTOPSIG(raw);
      } else if (done == agent_pid_) {
        agent_channel_->read_available();
        agent_status_ = raw;       // what it said before it ended comes first (below)
        agent_pid_ = -agent_pid_;  // reaped; its group may live on (end_agent ends it)
        break;
      }
      if (deadline.expired()) return reply;
      pollfd watch{agent_channel_->fd(), POLLIN, 0};
      ::poll(&watch, 1, static_cast<int>(std::min<std::chrono::milliseconds>(deadline.remaining(), 20ms).count()));
      agent_channel_->read_available();
    }
    // Already reaped: a message it left, or its end.
    reply.message = next_from_agent();
    if (!reply.message) reply.status = agent_status_.value_or(0);
    return reply;
  }

  // The next whole message the agent sent, if any; an unreadable one is said as an error.
  std::optional<nlohmann::json> next_from_agent() {
    if (!agent_channel_) return std::nullopt;
    try {
      return agent_channel_->next();
    } catch (const detail::ChannelError&) {
      return nlohmann::json{{"error", "the MPI agent sent an unreadable message"}};
    }
  }

  bool agent_alive() const { return agent_pid_ > 0; }

  // Broadcasts rank 0's text to every rank through the agents' MPI.
  std::string agent_broadcast(const std::string& text, const Deadline& deadline) {
    if (!agent_alive() || !send_to(agent_channel_.get(), {{"op", "broadcast"}, {"text", text}, {"ms", deadline.remaining().count()}})) {
      throw ConfigError("mpi launcher: rank " + std::to_string(rank_) + ": the MPI agent is gone");
    }
    const AgentReply reply = await_agent(Deadline::after(deadline.remaining() + 1s));
    if (!reply.message) {
      throw ConfigError("mpi launcher: rank " + std::to_string(rank_) + ": the MPI broadcast of the rendezvous " +
                        (reply.status ? "ended the MPI agent (" + detail::describe_wait_status(*reply.status) + ")"
                                      : std::string("did not finish in time (did every rank start?)")));
    }
    if (reply.message->contains("error")) throw ConfigError(reply.message->at("error").get<std::string>());
    return reply.message->at("text").get<std::string>();
  }

  // Ends the agent's process group (it, and whatever its tasks forked) and reaps it.
  void end_agent() {
    const pid_t group = agent_pid_ > 0 ? agent_pid_ : -agent_pid_;
    if (group > 0) detail::end_process_groups({group}, 0ms);  // not asked: it may be stuck in a collective
    agent_channel_.reset();
    agent_pid_ = 0;
  }

  // The agent finalises MPI and leaves; bounded, then it is ended.
  void stop_agent() {
    if (agent_pid_ == 0) return;
    if (agent_alive() && send_to(agent_channel_.get(), {{"op", "finalize"}})) {
      const Deadline deadline = Deadline::after(options_.report_grace);
      while (agent_alive() && !deadline.expired()) {
        const AgentReply reply = await_agent(deadline);
        if (reply.status) break;
      }
    }
    end_agent();
  }

  [[noreturn]] void agent_main(pid_t parent, int fd) {
    // Dies with its rank (mpirun ends the processes it started, not this one).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::setpgid(0, 0);
    nlohmann::json hello;
    try {
      detail::mpi_runtime::ensure_initialized();
      hello = {{"rank", detail::mpi_runtime::world_rank()},
               {"size", detail::mpi_runtime::world_size()},
               {"on_node", detail::mpi_runtime::ranks_on_this_node()}};
    } catch (const std::exception& e) {
      hello = {{"error", e.what()}};
    }
    // Open MPI's fatal-signal handlers would print and may talk to mpirun: the agent dies of
    // its signal, and its rank reports it.
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM}) ::signal(sig, SIG_DFL);
    detail::LineChannel channel(fd);
    send_to(&channel, hello);
    if (hello.contains("error")) ::_exit(1);
    rank_ = hello["rank"].get<int>();
    at::set_num_threads(1);  // the ranks share the machine's cores, as pool workers do
    struct Held {  // the last variant's communicator and store, until every rank has the report
      c10::intrusive_ptr<c10d::Store> store;
      detail::LocalRun local;
    };
    std::unique_ptr<Held> held;
    // Each wait is bounded; its rank's end (end of file, or PR_SET_PDEATHSIG) ends the loop.
    while (true) {
      nlohmann::json request;
      try {
        auto message = channel.receive(Deadline::after(std::chrono::minutes(10)));
        if (!message) continue;
        request = std::move(*message);
      } catch (const detail::ChannelError&) {
        break;  // its rank is gone, or sent what is not a message
      }
      const std::string op = request.value("op", "");
      if (op == "broadcast") {
        try {
          const auto deadline = Deadline::after(std::chrono::milliseconds(request.at("ms").get<long>()));
          send_to(&channel, {{"text", detail::mpi_runtime::broadcast_text(request.at("text").get<std::string>(), 0, deadline)}});
        } catch (const std::exception& e) {
          send_to(&channel, {{"error", "mpi launcher: rank " + std::to_string(rank_) + ": " + detail::short_what(e)}});
        }
      } else if (op == "run") {
        held.reset();
        held = std::make_unique<Held>();
        try {
          store_socket_ = request.value("socket", "");
          store_host_ = request.value("host", "");
          store_port_ = request.value("port", -1);
          store_secret_ = request.value("secret", "");
          const Job job = detail::request_from_json(request.at("job"));
          const Deadline deadline = Deadline::after(std::chrono::milliseconds(request.at("ms").get<long>()));
          detail::CommSpec spec;
          spec.backend = job.backend;
          spec.comm_device = job.comm_device;
          spec.rank = rank_;
          spec.world_size = request.at("world_size").get<int>();
          spec.local_rank = request.at("local_rank").get<int>();
          spec.op_timeout = std::chrono::milliseconds(request.at("op_timeout_ms").get<long>());
          spec.gloo_address = request.value("gloo_address", "");
          held->store = c10::make_intrusive<c10d::PrefixStore>(request.at("prefix").get<std::string>(), connect_child_store(deadline));
          auto group_store = c10::make_intrusive<c10d::PrefixStore>("group/", held->store);
          detail::TaskHooks hooks;
          hooks.observer = std::make_shared<StoreProgress>(held->store, rank_);
          auto store = held->store;
          hooks.on_phase = [store, this](const std::string& phase) {
            set_quietly(*store, "phase/" + std::to_string(rank_),
                        nlohmann::json({{"phase", phase}, {"pid", static_cast<long>(::getpid())}, {"host", host_name()}}));
          };
          {
            const TaskMemoryLimit limit(options_.rank_memory_bytes);
            held->local = detail::run_task_here(job, spec, group_store, deadline, hooks);
          }
          send_to(&channel, {{"variant", request.at("prefix")}, {"outcome", detail::to_json(held->local.outcome)}}, 5s);
        } catch (const std::exception& e) {
          RankOutcome failed;
          failed.rank = rank_;
          failed.state = RankState::Raised;
          failed.error_type = "ConfigError";
          failed.error = "rank " + std::to_string(rank_) + ": the MPI agent could not run the task: " + detail::short_what(e);
          send_to(&channel, {{"variant", request.value("prefix", "")}, {"outcome", detail::to_json(failed)}}, 5s);
        }
      } else if (op == "release") {
        held.reset();
      } else if (op == "finalize") {
        held.reset();
        detail::mpi_runtime::finalize();
        ::_exit(0);
      }
    }
    ::_exit(0);  // its rank is gone; no static destructors (MPI_Finalize would wait for peers)
  }

  // Runs an mpi-backend task in the agent; its outcome, or how the agent ended or stopped.
  RankOutcome run_in_agent(const Job& request, const detail::CommSpec& spec, const std::string& prefix,
                           const Deadline& deadline, c10d::Store& store) {
    RankOutcome outcome;
    outcome.rank = rank_;
    outcome.pid = agent_pid_;
    const nlohmann::json message = {{"op", "run"}, {"job", detail::to_json(request)}, {"prefix", prefix},
                                    {"ms", deadline.remaining().count()}, {"world_size", spec.world_size},
                                    {"local_rank", spec.local_rank}, {"op_timeout_ms", spec.op_timeout.count()},
                                    {"gloo_address", spec.gloo_address}, {"socket", store_socket_},
                                    {"host", store_host_}, {"port", store_port_}, {"secret", store_secret_}};
    if (!agent_alive() || !send_to(agent_channel_.get(), message)) {
      outcome.state = RankState::Crashed;
      outcome.how_died = "the rank's MPI agent is gone";
      return outcome;
    }
    // A rank that timed out in a collective at the deadline says so within moments.
    const Deadline wait_deadline =
        Deadline::after(deadline.remaining() + moment());
    AgentReply reply = await_agent(wait_deadline);
    // An earlier variant's outcome that came after its wait is not this one's.
    while (reply.message && reply.message->value("variant", "") != prefix) reply = await_agent(wait_deadline);
    if (reply.message) {
      agent_holds_variant_ = true;
      try {
        return detail::outcome_from_json(reply.message->at("outcome"));
      } catch (const std::exception&) {
      }
    }
    fill_progress(store, rank_, outcome);
    if (reply.status) {
      outcome.state = RankState::Crashed;
      outcome.how_died = detail::describe_wait_status(*reply.status);
      if (WIFEXITED(*reply.status)) outcome.how_died += " (the task's process exited inside the task)";
      end_agent();  // what the task forked goes with it
    } else {
      outcome.state = RankState::Stuck;
      if (reply.stop_signal != 0) {
        const char* name = detail::signal_name(reply.stop_signal);
        outcome.how_died = "stopped by " + (name ? std::string(name) : "signal " + std::to_string(reply.stop_signal));
      }
    }
    return outcome;
  }

  void finish(int exit_code) {
    if (options_.launcher == "mpi" && stopped_ && stopped_in_agent_) {
      std::cout.flush();
      std::cerr.flush();
      std::fflush(nullptr);
      say_left();  // rank 0: every rank has its last report (bounded)
      if (rank_ == 0) {
        private_host_.reset();  // the reports are written: nobody needs the store any more
      } else {
        // Rank 0 ends the job once its reports are written (mpirun then ends every process it
        // started); a rank 0 that is itself gone never does, so the wait is bounded.
        std::this_thread::sleep_for(std::max<std::chrono::milliseconds>(4 * options_.report_grace, 10s));
      }
      // The agent may be stuck in a collective, or looping in a task: it is ended, not asked.
      // This process exiting with the code makes mpirun end the job with it (a process it
      // started returned non-zero), as MPI_Abort would, with no MPI_Finalize to wait in.
      end_agent();
      ::_exit(exit_code);
    }
    leave();
  }

  ~Impl() { leave(); }

  void leave() {
    if (left_) return;
    left_ = true;
    say_left();
    store_.reset();
    private_host_.reset();  // after every rank has left (above): stops serving, removes the folder
    if (options_.launcher == "mpi") stop_agent();
  }

  // Rank 0 hosts the store: it keeps it (bounded) until every other rank has left its runner,
  // so that no rank loses the store while it still reads its last report.
  void say_left() {
    try {
      if (rank_ != 0 && store_) {
        store_->add("left", 1);
      } else if (store_) {
        const Deadline deadline = Deadline::after(options_.report_grace);
        auto pause = 1ms;
        while (store_->add("left", 0) < world_size_ - 1 && !deadline.expired()) {
          std::this_thread::sleep_for(pause);
          pause = std::min(pause * 2, std::chrono::milliseconds(50));
        }
      }
    } catch (const std::exception&) {
    }
  }

  JobResult run(const Job& request) {
    if (stopped_) {
      throw ConfigError("the peer run stopped after " + stop_reason_ +
                        ": its process group is broken; start the launcher again to run more variants");
    }
    if (const Backend* backend = find_backend(request.backend);
        backend != nullptr && std::find(backend->peer_launchers.begin(), backend->peer_launchers.end(),
                                        options_.launcher) == backend->peer_launchers.end()) {
      throw ConfigError("variant " + request.id + ": the " + backend->name + " backend needs ranks started by mpirun (launcher mpi)");
    }
    if (auto reason = backend_unavailable_reason(request.backend, request.comm_device, local_world_size_)) {
      throw ConfigError("variant " + request.id + ": " + *reason);
    }
    const auto started = std::chrono::steady_clock::now();
    const Deadline deadline = Deadline::after(request.deadline);
    // From the variant's start: a verdict comes within its deadline plus the grace, however
    // late this rank's own task ended (which is by the deadline plus a moment).
    const Deadline report_deadline = Deadline::after(request.deadline + options_.report_grace);
    const std::string prefix = "v" + std::to_string(++variant_count_) + "/";
    auto store = c10::make_intrusive<c10d::PrefixStore>(prefix, store_);
    auto group_store = c10::make_intrusive<c10d::PrefixStore>("group/", store);

    detail::CommSpec spec;
    spec.backend = request.backend;
    spec.comm_device = request.comm_device;
    spec.rank = rank_;
    spec.world_size = world_size_;
    spec.local_rank = local_rank_;
    spec.op_timeout = detail::op_timeout_of(request);
    spec.gloo_address = gloo_address_;
    detail::TaskHooks hooks;
    hooks.observer = std::make_shared<StoreProgress>(store, rank_);
    hooks.on_phase = [&](const std::string& phase) {
      set_quietly(*store, "phase/" + std::to_string(rank_),
                  nlohmann::json({{"phase", phase}, {"pid", static_cast<long>(::getpid())}, {"host", host_name()}}));
    };
    detail::LocalRun local;
    ChildTask child;
    if (task_runs_in_agent(options_.launcher, request)) {
      local.outcome = run_in_agent(request, spec, prefix, deadline, *store);
    } else if (task_runs_in_child(request)) {
      local.outcome = run_in_child(request, spec, prefix, deadline, *store, child);
    } else {
      local = detail::run_task_here(request, spec, group_store, deadline, hooks);
    }
    set_quietly(*store, "outcome/" + std::to_string(rank_), detail::to_json(local.outcome));

    JobResult run = rank_ == 0 ? gather(*store, request, local.outcome, report_deadline)
                                : await_report(*store, request, local.outcome, deadline);
    local.comm.reset();  // only now: peers may have been inside collectives until the report
    // After a hang or a crash the run stops: nobody waits for a child to leave on its own.
    end_child(child, run.status != RunStatus::Hang && run.status != RunStatus::Crash);
    if (agent_holds_variant_ && agent_alive()) send_to(agent_channel_.get(), {{"op", "release"}});
    agent_holds_variant_ = false;
    if (run.status == RunStatus::Hang || run.status == RunStatus::Crash) {
      stopped_ = true;
      stopped_in_agent_ = task_runs_in_agent(options_.launcher, request);
      stop_status_ = run.status;
      stop_reason_ = std::string("a ") + to_string(run.status) + " in variant " + request.id;
    }
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return run;
  }

  int world_size() const { return world_size_; }
  int rank() const { return rank_; }
  int local_rank() const { return local_rank_; }
  bool stopped() const { return stopped_; }
  RunStatus stopped_by() const { return stopped_ ? stop_status_ : RunStatus::Completed; }

 private:
  static void set_quietly(c10d::Store& store, const std::string& key, const nlohmann::json& value) {
    try {
      store.set(key, bytes_of(value.dump()));
    } catch (const std::exception&) {
      // rank 0 is gone; the report wait below says so
    }
  }

  std::optional<nlohmann::json> get_json(c10d::Store& store, const std::string& key) {
    try {
      if (!store.check({key})) return std::nullopt;
      return nlohmann::json::parse(text_of(store.get(key)));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  struct ChildTask {
    pid_t pid = -1;       // leads its own process group
    int release_fd = -1;  // closed when the child may go (every rank has the report)
  };

  // Runs the task in a child process (its own process group, its own connection to the store)
  // and returns its outcome: what it sent, or how it ended (crashed, exited, stopped, or still
  // running at the variant's deadline plus a moment for a rank that timed out to say so).
  RankOutcome run_in_child(const Job& request, const detail::CommSpec& spec, const std::string& prefix,
                           const Deadline& deadline, c10d::Store& store, ChildTask& child) {
    RankOutcome outcome;
    outcome.rank = rank_;
    int out_pipe[2] = {-1, -1};
    int release_pipe[2] = {-1, -1};
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(release_pipe, O_CLOEXEC) != 0) {
      for (int fd : {out_pipe[0], out_pipe[1], release_pipe[0], release_pipe[1]}) if (fd >= 0) ::close(fd);
      outcome.state = RankState::Raised;
      outcome.error_type = "ConfigError";
      outcome.error = "rank " + std::to_string(rank_) + ": cannot make a pipe for the task's process: " + std::strerror(errno);
      return outcome;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      ::close(out_pipe[0]);
      ::close(release_pipe[1]);
      const TaskMemoryLimit limit(options_.rank_memory_bytes);  // for the child's life: child_main does not return
      child_main(request, spec, prefix, deadline, out_pipe[1], release_pipe[0]);
    }
    ::close(out_pipe[1]);
    ::close(release_pipe[0]);
    if (pid < 0) {
      ::close(out_pipe[0]);
      ::close(release_pipe[1]);
      outcome.state = RankState::Raised;
      outcome.error_type = "ConfigError";
      outcome.error = "rank " + std::to_string(rank_) + ": cannot fork the task's process: " + std::strerror(errno);
      return outcome;
    }
    ::setpgid(pid, pid);  // also here: no window in which the group does not exist yet
    child.pid = pid;
    child.release_fd = release_pipe[1];
    outcome.pid = pid;
    ::fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);

    // A rank that timed out in a collective at the deadline says so within moments.
    const Deadline wait_deadline = Deadline::after(deadline.remaining() + moment());
    std::string sent;
    bool open = true;
    std::optional<int> status;
    bool stopped_by_signal = false;
    int stop_signal = 0;
    while (open) {
      pollfd watch{out_pipe[0], POLLIN, 0};
      ::poll(&watch, 1, static_cast<int>(std::min<std::chrono::milliseconds>(wait_deadline.remaining(), 20ms).count()));
      open = drain(out_pipe[0], sent);
      if (!status) {
        int raw = 0;
        const pid_t done = ::waitpid(pid, &raw, WNOHANG | WUNTRACED);
        if (done == pid && WIFSTOPPED(raw)) {
          stopped_by_signal = true;
          stop_signal = WSTOPSIG(raw);
        } else if (done == pid) {
          status = raw;
          drain(out_pipe[0], sent);
          break;  // its own children may still hold the pipe open
        }
      }
      if (wait_deadline.expired()) break;
    }
    ::close(out_pipe[0]);
    if (!open || status) {
      try {
        if (!sent.empty()) return detail::outcome_from_json(nlohmann::json::parse(sent));
      } catch (const std::exception&) {
        // a partial outcome: the child died while sending it
      }
    }
    if (!open && !status) {
      // The pipe closed without an outcome: the child is dying (or closed its descriptors).
      status = detail::reap_child(pid, Deadline::after(std::max<std::chrono::milliseconds>(wait_deadline.remaining(), 1s)));
    }
    fill_progress(store, rank_, outcome);
    if (status) {
      outcome.state = RankState::Crashed;
      outcome.how_died = detail::describe_wait_status(*status);
      if (WIFEXITED(*status)) outcome.how_died += " (the task's process exited inside the task)";
      child.pid = -1;  // reaped; its group may live on (end_child ends it)
      child_group_ = pid;
    } else {
      outcome.state = RankState::Stuck;
      if (stopped_by_signal) {
        const char* name = detail::signal_name(stop_signal);
        outcome.how_died = "stopped by " + (name ? std::string(name) : "signal " + std::to_string(stop_signal));
      }
    }
    return outcome;
  }

  [[noreturn]] void child_main(const Job& request, const detail::CommSpec& spec, const std::string& prefix,
                               const Deadline& deadline, int out_fd, int release_fd) {
    // The rank's fatal-signal handlers (Open MPI's among them) would act for the whole rank, or
    // hang talking to mpirun: the task's process dies of its signal, and the rank reports it.
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM}) ::signal(sig, SIG_DFL);
    int code = 0;
    try {
      at::set_num_threads(1);  // the ranks share the machine's cores, as pool workers do
      auto own = connect_child_store(deadline);
      auto store = c10::make_intrusive<c10d::PrefixStore>(prefix, own);
      auto group_store = c10::make_intrusive<c10d::PrefixStore>("group/", store);
      detail::TaskHooks hooks;
      hooks.observer = std::make_shared<StoreProgress>(store, rank_);
      hooks.on_phase = [&](const std::string& phase) {
        set_quietly(*store, "phase/" + std::to_string(rank_),
                    nlohmann::json({{"phase", phase}, {"pid", static_cast<long>(::getpid())}, {"host", host_name()}}));
      };
      detail::LocalRun local = detail::run_task_here(request, spec, group_store, deadline, hooks);
      write_all(out_fd, detail::to_json(local.outcome).dump());
      ::close(out_fd);
      // Keep the communicator until every rank has the report (peers may still be inside a
      // collective with us); the rank closes the pipe then, or is gone.
      char byte = 0;
      while (::read(release_fd, &byte, 1) < 0 && errno == EINTR) {
      }
    } catch (const std::exception& e) {
      const std::string text = "distmetrics: rank " + std::to_string(rank_) + ": the task's process failed: " + e.what() + "\n";
      write_all(STDERR_FILENO, text);
      code = 1;
    }
    ::_exit(code);  // no static destructors or atexit handlers of the rank (MPI's among them)
  }

  // The child may go; its process group (with whatever the task forked) is ended and reaped.
  void end_child(ChildTask& child, bool let_it_leave = true) {
    if (child.release_fd >= 0) ::close(child.release_fd);
    child.release_fd = -1;
    const pid_t group = child.pid > 0 ? child.pid : child_group_;
    if (group > 0) {
      // A healthy child leaves on its own once released.
      if (child.pid > 0 && let_it_leave) detail::reap_child(child.pid, Deadline::after(std::min<std::chrono::milliseconds>(options_.report_grace, 1s)));
      // What it forked, and a child that did not leave; reaped (ours as their subreaper).
      detail::end_process_groups({group}, 0ms);
    }
    child.pid = -1;
    child_group_ = 0;
  }

  // What the store says a rank was doing: the collectives it entered, the one it is inside.
  void fill_progress(c10d::Store& store, int r, RankOutcome& outcome) {
    if (auto progress = get_json(store, "progress/" + std::to_string(r))) {
      for (const auto& record : progress->value("trace", nlohmann::json::array())) {
        outcome.trace.push_back(detail::record_from_json(record));
      }
      if (progress->value("open", false) && !outcome.trace.empty()) outcome.blocked_in = outcome.trace.back();
    }
  }

  // Rank 0: every rank's outcome, or, for a rank that sent none by the deadline, what its
  // progress says (stuck, or gone if its process is no longer there).
  JobResult gather(c10d::Store& store, const Job& request, const RankOutcome& own, const Deadline& deadline) {
    std::vector<std::string> keys;
    for (int r = 0; r < world_size_; ++r) keys.push_back("outcome/" + std::to_string(r));
    // Until every rank has sent its outcome or is gone (its connection to the store closed: a
    // killed process, a host that went down), by the deadline.
    std::set<int> gone;
    for (auto pause = 1ms; !deadline.expired(); pause = std::min<std::chrono::milliseconds>(pause * 2, 20ms)) {
      if (store.check(keys)) break;
      gone = private_host_ ? private_host_->gone_ranks() : std::set<int>{};
      bool waiting = false;
      for (int r = 1; r < world_size_ && !waiting; ++r) waiting = !gone.count(r) && !store.check({keys[r]});
      if (!waiting) break;
      std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(pause, deadline.remaining()));
    }
    JobResult run;
    std::vector<std::string> phases(world_size_);
    std::vector<int> silent;  // sent no outcome, and their connection is still open
    for (int r = 0; r < world_size_; ++r) {
      if (r == 0) {
        run.ranks.push_back(own);
        if (own.state == RankState::Stuck) {
          if (auto phase = get_json(store, "phase/0")) phases[0] = phase->value("phase", "");
        }
        continue;
      }
      if (auto outcome = get_json(store, keys[r])) {
        run.ranks.push_back(detail::outcome_from_json(*outcome));
        if (run.ranks.back().state == RankState::Stuck) {
          if (auto phase = get_json(store, "phase/" + std::to_string(r))) phases[r] = phase->value("phase", "");
        }
        continue;
      }
      RankOutcome missing;
      missing.rank = r;
      missing.state = RankState::Stuck;
      if (!gone.count(r)) silent.push_back(r);
      if (auto phase = get_json(store, "phase/" + std::to_string(r))) {
        phases[r] = phase->value("phase", "");
        missing.pid = phase->value("pid", 0L);
        if (phase->value("host", "") == host_name() && missing.pid > 0 &&
            detail::process_state(static_cast<pid_t>(missing.pid)) != detail::ProcessState::Running) {
          missing.state = RankState::Crashed;
          missing.how_died = "its process is gone (its launcher has the exit status)";
        }
      }
      if (gone.count(r) && missing.state == RankState::Stuck) {
        missing.state = RankState::Crashed;
        missing.how_died = "its process is gone: its connection to the rendezvous store closed" +
                           (static_cast<size_t>(r) < hosts_.size() ? " (host " + hosts_[r] + ")" : std::string());
      }
      fill_progress(store, r, missing);
      run.ranks.push_back(std::move(missing));
    }
    detail::diagnose(run, phases, request.deadline);
    blame_the_silent(run, silent);
    name_hosts(run);
    set_quietly(store, "report", run.to_json());
    return run;
  }

  // How long after the deadline a task that timed out in a collective still has to say so: half
  // the report grace (at most 500 ms), so that its outcome reaches rank 0 within the grace.
  std::chrono::milliseconds moment() const { return std::min<std::chrono::milliseconds>(options_.report_grace / 2, 500ms); }

  // A hang where some ranks sent nothing at all by the deadline plus the grace (their process
  // alive as far as the store can tell: its connection did not close) while the others reported:
  // the silent ones are the cause (cut off by a partition, stopped, or their host is down),
  // whatever their last progress said, and the others' waits follow from it.
  void blame_the_silent(JobResult& run, const std::vector<int>& silent) const {
    if (run.status != RunStatus::Hang || silent.empty() || silent.size() + 1 >= static_cast<size_t>(world_size_) + 1) return;
    std::string who;
    for (size_t i = 0; i < silent.size(); ++i) who += (i ? ", " : "") + std::to_string(silent[i]);
    const bool one = silent.size() == 1;
    run.blamed_rank = one ? silent.front() : -1;
    run.diagnosis = std::string(one ? "rank " : "ranks ") + who + (one ? " sent" : " sent") +
                    " nothing by the deadline plus " + std::to_string(options_.report_grace.count()) +
                    " ms while the other ranks reported: " + (one ? "it is" : "they are") +
                    " cut off (a network partition, its host down) or stopped. What the others saw follows from it:\n" +
                    run.diagnosis;
  }

  // Ranks on several hosts: the diagnosis says where the blamed rank is, and which ranks each host holds.
  void name_hosts(JobResult& run) const {
    if (hosts_.size() != static_cast<size_t>(world_size_)) return;
    std::vector<std::string> order;
    std::map<std::string, std::vector<int>> ranks_of;
    for (int r = 0; r < world_size_; ++r) {
      if (!ranks_of.count(hosts_[r])) order.push_back(hosts_[r]);
      ranks_of[hosts_[r]].push_back(r);
    }
    if (order.size() < 2) return;
    std::string text;
    if (run.blamed_rank >= 0 && run.blamed_rank < world_size_) {
      text = "Rank " + std::to_string(run.blamed_rank) + " is on host " + hosts_[run.blamed_rank] + ". ";
    }
    text += "Hosts:";
    for (size_t h = 0; h < order.size(); ++h) {
      text += std::string(h ? ";" : "") + " " + order[h] + " rank" + (ranks_of[order[h]].size() > 1 ? "s " : " ");
      for (size_t i = 0; i < ranks_of[order[h]].size(); ++i) text += (i ? ", " : "") + std::to_string(ranks_of[order[h]][i]);
    }
    run.diagnosis += (run.diagnosis.empty() ? "" : "\n") + text + ".";
  }

  // Ranks other than 0: rank 0's report, or (rank 0 silent) this rank's own view as a hang.
  JobResult await_report(c10d::Store& store, const Job& request, const RankOutcome& own, const Deadline& variant) {
    const Deadline deadline = Deadline::after(variant.remaining() + 2 * options_.report_grace);
    if (wait_for_keys(store, {"report"}, deadline)) {
      if (auto report = get_json(store, "report")) return detail::run_from_json(*report);
    }
    JobResult run;
    for (int r = 0; r < world_size_; ++r) {
      RankOutcome outcome;
      outcome.rank = r;
      outcome.state = RankState::Stuck;
      run.ranks.push_back(r == rank_ ? own : outcome);
    }
    run.status = RunStatus::Hang;
    run.blamed_rank = 0;
    run.diagnosis = "rank " + std::to_string(rank_) + " heard no report from rank 0 within " +
                    std::to_string((request.deadline + 2 * options_.report_grace).count()) + " ms";
    return run;
  }

  PeerOptions options_;
  int rank_ = 0;
  int world_size_ = 1;
  int local_rank_ = 0;
  int local_world_size_ = 1;
  std::string gloo_address_;
  std::string store_host_;
  int store_port_ = -1;
  std::string store_secret_;  // the network store's (several hosts)
  std::vector<std::string> hosts_;  // rank 0: each rank's host name, by rank
  pid_t child_group_ = 0;  // a reaped child's process group, still to be ended
  bool stopped_in_agent_ = false;  // an mpi-backend task (run in the agent) hung or crashed
  // The MPI agent (launcher mpi): its pid (negative once reaped, 0 once ended), its socket, what
  // it sent that was not read yet, how it ended.
  pid_t agent_pid_ = 0;
  std::unique_ptr<detail::LineChannel> agent_channel_;
  std::optional<int> agent_status_;
  int ranks_on_node_ = 0;
  bool agent_holds_variant_ = false;  // it keeps the variant's communicator until released
  RunStatus stop_status_ = RunStatus::Completed;
  bool left_ = false;
  c10::intrusive_ptr<c10d::Store> store_;
  // Rank 0: the store it serves (a private Unix socket on one host, the rendezvous address on several).
  std::unique_ptr<detail::PoolStoreHost> private_host_;
  std::string store_socket_;                             // the private store's socket, if any
  std::uint64_t variant_count_ = 0;
  bool stopped_ = false;
  std::string stop_reason_;
};

PeerRunner::PeerRunner(PeerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
PeerRunner::~PeerRunner() = default;
JobResult PeerRunner::run(const Job& request) { return impl_->run(request); }
int PeerRunner::world_size() const { return impl_->world_size(); }
int PeerRunner::rank() const { return impl_->rank(); }
int PeerRunner::local_rank() const { return impl_->local_rank(); }
bool PeerRunner::stopped() const { return impl_->stopped(); }
RunStatus PeerRunner::stopped_by() const { return impl_->stopped_by(); }
void PeerRunner::finish(int exit_code) { impl_->finish(exit_code); }

}  // namespace distmetrics::runtime
