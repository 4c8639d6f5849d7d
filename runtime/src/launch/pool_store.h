// The rendezvous store of a rank pool, kept inside the supervisor: workers reach it only over
// the connections the supervisor accepted from processes it started (the pool's Unix socket,
// checked by peer credentials), so no other process can read, write or stall it. The supervisor
// serves it from its own poll loop, without a thread and without blocking: a slow or silent
// client delays only its own answers, never a deadline.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "wire.h"

namespace distmetrics::runtime::detail {

// Supervisor side: the keys and the waiting requests; one connection per worker.
class PoolStoreServer {
 public:
  void add_client(int rank, std::unique_ptr<LineChannel> channel);
  // Descriptors to poll for input.
  std::vector<int> fds() const;
  // Reads and answers whatever the clients sent; never blocks longer than a short send budget
  // per answer (a client that does not read its answers is dropped).
  void serve();
  // Forgets every key and waiting request (between variants: each variant has its own prefix).
  void clear();
  void drop_all() { clients_.clear(); waiting_.clear(); data_.clear(); }
  size_t clients() const { return clients_.size(); }

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
  std::map<std::string, std::vector<std::uint8_t>> data_;
  std::vector<Waiting> waiting_;
};

// Worker side: a c10d::Store whose every call is one request to the supervisor, bounded by the
// store's timeout.
class PoolStoreClient final : public c10d::Store {
 public:
  explicit PoolStoreClient(std::unique_ptr<LineChannel> channel);

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

 private:
  nlohmann::json request(nlohmann::json body, std::chrono::milliseconds timeout);

  std::mutex mutex_;
  std::unique_ptr<LineChannel> channel_;
  std::uint64_t next_id_ = 1;
};

std::string hex_of(const std::vector<std::uint8_t>& bytes);
std::vector<std::uint8_t> bytes_of_hex(const std::string& hex);

}  // namespace distmetrics::runtime::detail
