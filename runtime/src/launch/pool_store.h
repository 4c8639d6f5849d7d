// The rendezvous store of a rank pool, kept inside the supervisor: workers reach it only over
// the connections the supervisor accepted from processes it started (the pool's Unix socket,
// checked by peer credentials), so no other process can read, write or stall it. The supervisor
// serves it from its own poll loop, without a thread and without blocking: a slow or silent
// client delays only its own answers, never a deadline.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/version.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "wire.h"

namespace distmetrics::runtime::detail {

// An answer is a few hundred bytes: a client whose socket cannot take it within this budget is
// not reading (stopped, or not one of ours) and is dropped.
inline constexpr std::chrono::milliseconds kAnswerBudget{50};

// Supervisor side: the keys and the waiting requests; one connection per worker.
class PoolStoreServer {
 public:
  void add_client(int rank, std::unique_ptr<LineChannel> channel);
  // Forgets a client and its requests (a rank ended alone after a crash).
  void remove_client(int rank);
  // Descriptors to poll for input.
  std::vector<int> fds() const;
  // Reads and answers whatever the clients sent; never blocks longer than a short send budget
  // per answer (a client that does not read its answers is dropped).
  void serve();
  // Forgets every key and waiting request (between jobs: each job has its own prefix).
  void clear();
  void drop_all() {
    clients_.clear();
    waiting_.clear();
    data_.clear();
    latest_.clear();
  }
  size_t clients() const { return clients_.size(); }
  bool has_client(int id) const { return clients_.count(id) > 0; }
  // When serve() last read a request from each client (by client id).
  const std::map<int, std::chrono::steady_clock::time_point>& heard() const { return heard_; }
  // The clients blocked on the store: their latest request is a get or wait not yet answered (an
  // earlier one the client gave up on does not count: a client sends one request at a time).
  std::set<int> blocked() const;
  // Answers the blocked requests of these clients with an error (`why`), as their own timeout
  // would end them, but at once: for waits that nothing can ever answer (pool_supervision.cpp).
  void fail_blocked(const std::set<int>& ids, const std::string& why);

 private:
  struct Waiting {
    LineChannel* client;
    std::uint64_t id;
    std::vector<std::string> keys;
    std::string op;  // "get" or "wait"
  };
  void handle(LineChannel& client, const nlohmann::json& request);
  bool answer(LineChannel& client, std::uint64_t id, nlohmann::json body);
  bool ready(const std::vector<std::string>& keys) const;
  void wake_waiters();

  std::map<int, std::unique_ptr<LineChannel>> clients_;
  std::map<int, std::chrono::steady_clock::time_point> heard_;
  std::map<const LineChannel*, std::uint64_t> latest_;  // each client's latest request id
  std::map<std::string, std::vector<std::uint8_t>> data_;
  std::vector<Waiting> waiting_;
};

// c10d::Store::clone() (pure virtual from torch 2.8 on): a second Store on the same keys, to be
// used from another thread.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 8)
#define DISTMETRICS_C10D_STORE_HAS_CLONE 1
#else
#define DISTMETRICS_C10D_STORE_HAS_CLONE 0
#endif

// Worker side: a c10d::Store whose every call is one request to the supervisor, bounded by the
// store's timeout. Clones share the one connection (each request holds it until answered).
class PoolStoreClient final : public c10d::Store {
 public:
  explicit PoolStoreClient(std::unique_ptr<LineChannel> channel);
#if DISTMETRICS_C10D_STORE_HAS_CLONE
  c10::intrusive_ptr<c10d::Store> clone() override;
#endif

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

  // Runs before each request (of this client and its clones) is sent: a rank worker writes its
  // queued progress first, so that the supervisor never sees a rank blocked on the store before
  // the collectives it went through to get there.
  void set_before_request(std::function<void()> hook) { connection_->before_request = std::move(hook); }

  // This end's address when the store is reached over TCP ("" on a Unix socket).
  std::string local_address() const { return detail::local_address(connection_->channel->fd()); }

 private:
  struct Connection {
    std::mutex mutex;
    std::unique_ptr<LineChannel> channel;
    std::uint64_t next_id = 1;
    std::function<void()> before_request;  // runs before each request is sent (set_before_request)
  };
  explicit PoolStoreClient(std::shared_ptr<Connection> connection) : connection_(std::move(connection)) {}
  nlohmann::json request(nlohmann::json body, std::chrono::milliseconds timeout);

  std::shared_ptr<Connection> connection_;
};

// A PoolStoreServer served from its own thread at a Unix socket in a private 0700 folder: the
// rendezvous of a peer launch (mpirun, env) whose ranks are all on this host, in place of a
// TCPStore that would listen on every interface. Only this user can reach the folder, and every
// connection's peer credentials (SO_PEERCRED) are checked; nothing listens on a network port.
class PoolStoreHost {
 public:
  // folder "": a fresh folder from mkdtemp in `base` (when given and short enough for a socket's
  // path), else in $TMPDIR (or /tmp). Otherwise that folder, created 0700 here; a stale one of
  // this user that nobody serves any more is replaced, one in use or of another user is a
  // ConfigError.
  explicit PoolStoreHost(const std::string& folder = "", const std::string& base = "");
  ~PoolStoreHost();  // stops serving, removes the folder
  PoolStoreHost(const PoolStoreHost&) = delete;
  PoolStoreHost& operator=(const PoolStoreHost&) = delete;

  // Across hosts: served on `address`:`port` alone (port 0: the kernel chooses), not on every
  // interface as LibTorch 1.13's TCPStore would. A connection must first send the run's secret
  // ({"op":"hello","secret":...}) within kHelloBudget; one that sends another, or nothing, is
  // closed, counted and logged on stderr with its address. The secret must not be empty.
  PoolStoreHost(const std::string& address, std::uint16_t port, std::string secret);

  std::string socket_path() const { return folder_ + "/store.sock"; }
  std::uint16_t port() const { return port_; }  // network mode
  // Connections refused: another user's process (cannot happen through a 0700 folder unless
  // root), or, on the network, one without the run's secret.
  int rejected() const { return rejected_.load(); }
  // Network mode: the ranks whose own connection (the one that named its rank in its hello) has
  // closed: their process, or their host, is gone.
  std::set<int> gone_ranks() const;
  // Network mode: for each rank heard so far (any message on a connection that named it: its own,
  // its heartbeat's), how long before this store's latest serving pass it was last heard. Measured
  // against that pass, not the caller's clock: a serving thread that was not scheduled for a
  // while finds the messages that came meanwhile before anyone is counted silent.
  std::map<int, std::chrono::milliseconds> silent_for() const;

 private:
  void serve_loop();
  void admit(int& next_client);  // network mode: hellos of pending connections

  struct Pending {
    std::unique_ptr<LineChannel> channel;
    std::string from;
    Deadline deadline;
  };
  std::string secret_;            // network mode
  std::string address_;           // network mode, as given
  std::uint16_t port_ = 0;
  std::vector<Pending> pending_;  // network mode: accepted, not yet shown the secret
  std::map<int, int> rank_of_client_;  // network mode: client id -> the rank it named
  std::map<int, int> beat_of_client_;  // network mode: client id -> the rank whose heartbeat it carries
  mutable std::mutex gone_mutex_;      // guards gone_, heard_of_rank_, last_pass_
  std::set<int> gone_;
  std::map<int, std::chrono::steady_clock::time_point> heard_of_rank_;
  std::chrono::steady_clock::time_point last_pass_;
  std::string folder_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::atomic<int> rejected_{0};
  PoolStoreServer server_;  // touched by the serving thread only
  std::thread thread_;
};

// A client of a PoolStoreHost, once the socket's folder is known to be this user's and closed to
// everyone else (so nobody else can have put a socket there); waits for the folder and the
// socket until the deadline (the host may start later). Every call is bounded by `timeout`.
c10::intrusive_ptr<PoolStoreClient> connect_to_private_store(const std::string& socket_path, const Deadline& deadline,
                                                             std::chrono::milliseconds timeout);

// A client of a PoolStoreHost on the network: connects (retried until the deadline: rank 0 may
// start later), shows `secret`, and waits for the host to admit it. ConfigError when the host
// refuses or never answers.
// `rank`: the rank whose own connection this is (rank 0 learns when it closes), -1 for others;
// with `heartbeat`, the connection of that rank's heartbeat (heard as the rank, never "gone").
c10::intrusive_ptr<PoolStoreClient> connect_to_network_store(const std::string& host, std::uint16_t port,
                                                             const std::string& secret, const Deadline& deadline,
                                                             std::chrono::milliseconds timeout, int rank = -1,
                                                             bool heartbeat = false);

// How long a network connection has to show the run's secret.
constexpr std::chrono::milliseconds kHelloBudget{2000};

// The private folder of a peer launch with the env launcher on one host, the same on every rank:
// derived from the user and MASTER_PORT (which no two runs on a host can share).
std::string env_launch_store_folder(int master_port);

std::string hex_of(const std::vector<std::uint8_t>& bytes);
// 32 hex digits from /dev/urandom: a run's secret when the user gave none (mpi sends it to the ranks).
std::string random_secret();
std::vector<std::uint8_t> bytes_of_hex(const std::string& hex);

}  // namespace distmetrics::runtime::detail
