// The store of a peer launch (mpirun, env): rank 0 hosts the project's store (pool_store.h),
// every rank connects to it and checks in, and each task's process (a gloo task's child, the MPI
// agent) opens its own connection to it from a StoreAddress. Every call is bounded.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "distmetrics/runtime/deadline.h"
#include "peer_env.h"

namespace distmetrics::runtime::detail {

class PoolStoreHost;
class PoolStoreClient;
class Heartbeat;

// Where rank 0's store is: its Unix socket (every rank on this host), or its network address and
// the run's secret. A task's process opens its own connection from it.
struct StoreAddress {
  std::string socket;  // the private store's socket; "" across hosts
  std::string host;
  int port = -1;
  std::string secret;
  // A fresh connection; every call on it is bounded by what is left of `deadline`.
  c10::intrusive_ptr<c10d::Store> connect(const Deadline& deadline) const;
};

// Rank 0's text, on every rank (mpi: through the agents' MPI). Throws ConfigError.
using Broadcast = std::function<std::string(const std::string& text, const Deadline& deadline)>;

class PeerRendezvous {
 public:
  // Rank 0 serves the store, every rank connects and checks in; rank 0 waits for all of them
  // (a wrong WORLD_SIZE, a rank that never joins is caught here) and says "ok" or why the run
  // cannot start, which every rank that joined throws as a ConfigError. `broadcast` is needed
  // by the mpi launcher only. From then on every store call is bounded by the report grace.
  PeerRendezvous(const PeerLaunch& launch, const Broadcast& broadcast, std::chrono::milliseconds connect_deadline,
                 std::chrono::milliseconds report_grace);
  ~PeerRendezvous();
  PeerRendezvous(const PeerRendezvous&) = delete;
  PeerRendezvous& operator=(const PeerRendezvous&) = delete;

  const c10::intrusive_ptr<c10d::Store>& store() const { return store_; }
  const StoreAddress& address() const { return address_; }
  // The address gloo binds to: the launch's, or across hosts without GLOO_SOCKET_IFNAME the
  // address of this end of the connection to rank 0's store.
  const std::string& gloo_address() const { return gloo_address_; }
  // Rank 0: each rank's host name, by rank.
  const std::vector<std::string>& hosts() const { return hosts_; }
  // Rank 0 across hosts: the ranks whose own connection to the store closed (gone).
  std::set<int> gone_ranks() const;
  // Rank 0 across hosts: how long ago each rank was last heard (its heartbeat, every
  // kBeatPeriod, or any other message of its runner); a rank never heard is absent.
  std::map<int, std::chrono::milliseconds> silent_for() const;
  // The other ranks across hosts: from now on each heartbeat looks for the report of the job
  // whose keys have this prefix ("v3/"); false when this rank sends no heartbeats (one host).
  bool watch_report(const std::string& prefix);
  // Whether a heartbeat found the watched job's report.
  bool report_out() const;
  // This rank is done with the store. Rank 0 keeps serving (bounded by the report grace) until
  // every other rank has said so, so that no rank loses the store while it reads its last report.
  void say_left();
  // Rank 0: stops serving the store (the other ranks have their reports).
  void stop_serving();
  // Drops this rank's connection, then (rank 0) stops serving.
  void close();

 private:
  void connect_privately(const Broadcast& broadcast, const Deadline& deadline);
  void connect_over_network(const Broadcast& broadcast, const Deadline& deadline);
  void check_in(const Deadline& deadline);
  void check_that_every_rank_joined(const Deadline& deadline);

  PeerLaunch launch_;
  std::chrono::milliseconds connect_deadline_;
  std::chrono::milliseconds report_grace_;
  std::string gloo_address_;
  StoreAddress address_;
  std::vector<std::string> hosts_;
  std::unique_ptr<PoolStoreHost> host_;  // rank 0
  c10::intrusive_ptr<c10d::Store> store_;
  std::unique_ptr<Heartbeat> heartbeat_;  // the other ranks, across hosts
};

// Polls the store until every key exists or the deadline passes (a store that does not answer
// counts as not there yet).
bool wait_for_keys(c10d::Store& store, const std::vector<std::string>& keys, const Deadline& deadline);
// Sets a key to the value's JSON; a store that is gone is left to the waits that follow.
void set_quietly(c10d::Store& store, const std::string& key, const nlohmann::json& value);
// A key's JSON, or nullopt when it is not there, not JSON, or the store does not answer.
std::optional<nlohmann::json> get_json(c10d::Store& store, const std::string& key);

std::vector<std::uint8_t> bytes_of(const std::string& text);
std::string text_of(const std::vector<std::uint8_t>& bytes);

}  // namespace distmetrics::runtime::detail
