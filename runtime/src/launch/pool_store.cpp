#include "pool_store.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <stdexcept>

#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime::detail {

using namespace std::chrono_literals;


std::string hex_of(const std::vector<std::uint8_t>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (auto b : bytes) {
    text.push_back(digits[b >> 4]);
    text.push_back(digits[b & 15]);
  }
  return text;
}

std::string random_secret() {
  std::vector<std::uint8_t> bytes(16);
  FILE* source = std::fopen("/dev/urandom", "rb");
  const bool read = source != nullptr && std::fread(bytes.data(), 1, bytes.size(), source) == bytes.size();
  if (source != nullptr) std::fclose(source);
  if (!read) throw ConfigError("cannot read /dev/urandom for the run's secret: set DISTMETRICS_RUN_SECRET");
  return hex_of(bytes);
}

std::vector<std::uint8_t> bytes_of_hex(const std::string& hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw std::runtime_error("pool store: a value is not hexadecimal");
  };
  if (hex.size() % 2 != 0) throw std::runtime_error("pool store: a value has an odd number of hex digits");
  std::vector<std::uint8_t> bytes(hex.size() / 2);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(nibble(hex[2 * i]) * 16 + nibble(hex[2 * i + 1]));
  return bytes;
}

// --- Supervisor side ---------------------------------------------------------------------------------

void PoolStoreServer::add_client(int rank, std::unique_ptr<LineChannel> channel) {
  if (auto old = clients_.find(rank); old != clients_.end()) latest_.erase(old->second.get());
  clients_[rank] = std::move(channel);
}

void PoolStoreServer::remove_client(int rank) {
  const auto it = clients_.find(rank);
  if (it == clients_.end()) return;
  const LineChannel* client = it->second.get();
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), [client](const Waiting& w) { return w.client == client; }),
                 waiting_.end());
  latest_.erase(client);
  heard_.erase(rank);
  clients_.erase(it);
}

std::vector<int> PoolStoreServer::fds() const {
  std::vector<int> fds;
  for (const auto& [rank, client] : clients_) fds.push_back(client->fd());
  return fds;
}

void PoolStoreServer::clear() {
  data_.clear();
  waiting_.clear();
}

std::set<int> PoolStoreServer::blocked() const {
  std::set<int> ids;
  for (const auto& [id, client] : clients_) {
    const auto latest = latest_.find(client.get());
    if (latest == latest_.end()) continue;
    if (std::any_of(waiting_.begin(), waiting_.end(),
                    [&](const Waiting& w) { return w.client == client.get() && w.id == latest->second; }))
      ids.insert(id);
  }
  return ids;
}

void PoolStoreServer::serve() {
  for (auto it = clients_.begin(); it != clients_.end();) {
    LineChannel& client = *it->second;
    bool broken = !client.read_available();
    try {
      while (auto request = client.next()) {
        heard_[it->first] = std::chrono::steady_clock::now();
        latest_[&client] = request->value("id", std::uint64_t{0});
        handle(client, *request);
      }
    } catch (const std::exception&) {
      broken = true;  // a malformed request: the client is not following the protocol
    }
    if (broken) {
      waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), [&](const Waiting& w) { return w.client == &client; }),
                     waiting_.end());
      heard_.erase(it->first);
      latest_.erase(&client);
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
}

void PoolStoreServer::fail_blocked(const std::set<int>& ids, const std::string& why) {
  for (int id : ids) {
    const auto client = clients_.find(id);
    if (client == clients_.end()) continue;
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->client != client->second.get()) {
        ++it;
        continue;
      }
      answer(*it->client, it->id, {{"error", why}});
      it = waiting_.erase(it);
    }
  }
}

bool PoolStoreServer::ready(const std::vector<std::string>& keys) const {
  return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return data_.count(k) > 0; });
}

bool PoolStoreServer::answer(LineChannel& client, std::uint64_t id, nlohmann::json body) {
  body["id"] = id;
  try {
    client.send(body, Deadline::after(kAnswerBudget));
    return true;
  } catch (const ChannelError&) {
    return false;
  }
}

void PoolStoreServer::wake_waiters() {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (!ready(it->keys)) {
      ++it;
      continue;
    }
    nlohmann::json body = nlohmann::json::object();
    if (it->op == "get") body["value"] = hex_of(data_.at(it->keys.front()));
    answer(*it->client, it->id, body);
    it = waiting_.erase(it);
  }
}

void PoolStoreServer::handle(LineChannel& client, const nlohmann::json& request) {
  const std::string op = request.at("op").get<std::string>();
  const std::uint64_t id = request.at("id").get<std::uint64_t>();
  if (op == "set") {
    data_[request.at("key").get<std::string>()] = bytes_of_hex(request.at("value").get<std::string>());
    answer(client, id, nlohmann::json::object());
    wake_waiters();
  } else if (op == "get" || op == "wait") {
    std::vector<std::string> keys = op == "get" ? std::vector<std::string>{request.at("key").get<std::string>()}
                                                : request.at("keys").get<std::vector<std::string>>();
    waiting_.push_back({&client, id, std::move(keys), op});
    wake_waiters();
  } else if (op == "add") {
    const std::string key = request.at("key").get<std::string>();
    std::int64_t value = request.at("value").get<std::int64_t>();
    if (auto it = data_.find(key); it != data_.end()) {
      value += std::stoll(std::string(it->second.begin(), it->second.end()));
    }
    const std::string text = std::to_string(value);
    data_[key] = std::vector<std::uint8_t>(text.begin(), text.end());
    answer(client, id, {{"value", value}});
    wake_waiters();
  } else if (op == "compare_set") {
    const std::string key = request.at("key").get<std::string>();
    const auto expected = bytes_of_hex(request.at("expected").get<std::string>());
    const auto desired = bytes_of_hex(request.at("desired").get<std::string>());
    auto it = data_.find(key);
    if (it == data_.end() && expected.empty()) {
      data_[key] = desired;
      answer(client, id, {{"value", hex_of(desired)}});
      wake_waiters();
    } else if (it != data_.end() && it->second == expected) {
      it->second = desired;
      answer(client, id, {{"value", hex_of(desired)}});
    } else {
      answer(client, id, {{"value", it == data_.end() ? hex_of(expected) : hex_of(it->second)}});
    }
  } else if (op == "delete") {
    answer(client, id, {{"value", data_.erase(request.at("key").get<std::string>()) > 0}});
  } else if (op == "check") {
    answer(client, id, {{"value", ready(request.at("keys").get<std::vector<std::string>>())}});
  } else if (op == "count") {
    answer(client, id, {{"value", static_cast<std::int64_t>(data_.size())}});
  } else {
    throw std::runtime_error("pool store: unknown operation '" + op + "'");
  }
}

// --- Worker side -------------------------------------------------------------------------------------

PoolStoreClient::PoolStoreClient(std::unique_ptr<LineChannel> channel) : connection_(std::make_shared<Connection>()) {
  connection_->channel = std::move(channel);
}

#if DISTMETRICS_C10D_STORE_HAS_CLONE
c10::intrusive_ptr<c10d::Store> PoolStoreClient::clone() {
  auto copy = c10::intrusive_ptr<PoolStoreClient>::unsafe_steal_from_new(new PoolStoreClient(connection_));
  copy->setTimeout(timeout_);
  return copy;
}
#endif

nlohmann::json PoolStoreClient::request(nlohmann::json body, std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(connection_->mutex);
  if (connection_->before_request) connection_->before_request();
  const std::uint64_t id = connection_->next_id++;
  body["id"] = id;
  const Deadline deadline = Deadline::after(std::max(timeout, std::chrono::milliseconds(1)));
  connection_->channel->send(body, deadline);
  while (true) {
    auto reply = connection_->channel->receive(deadline);
    if (!reply) {
      throw std::runtime_error("the pool store did not answer '" + body.value("op", "") + "' within " +
                               std::to_string(deadline.budget().count()) + " ms (a rank that never arrived?)");
    }
    if (reply->value("id", std::uint64_t{0}) != id) continue;  // older ids: answers to requests that timed out
    if (reply->contains("error"))  // the store will never answer it: as a timeout would end it, at once
      throw std::runtime_error("the pool store cannot answer '" + body.value("op", "") + "': " +
                               reply->at("error").get<std::string>());
    return *reply;
  }
}

void PoolStoreClient::set(const std::string& key, const std::vector<uint8_t>& value) {
  request({{"op", "set"}, {"key", key}, {"value", hex_of(value)}}, timeout_);
}

std::vector<uint8_t> PoolStoreClient::compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                                 const std::vector<uint8_t>& desired) {
  auto reply = request({{"op", "compare_set"}, {"key", key}, {"expected", hex_of(expected)}, {"desired", hex_of(desired)}},
                       timeout_);
  return bytes_of_hex(reply.at("value").get<std::string>());
}

std::vector<uint8_t> PoolStoreClient::get(const std::string& key) {
  return bytes_of_hex(request({{"op", "get"}, {"key", key}}, timeout_).at("value").get<std::string>());
}

int64_t PoolStoreClient::add(const std::string& key, int64_t value) {
  return request({{"op", "add"}, {"key", key}, {"value", value}}, timeout_).at("value").get<int64_t>();
}

bool PoolStoreClient::deleteKey(const std::string& key) {
  return request({{"op", "delete"}, {"key", key}}, timeout_).at("value").get<bool>();
}

bool PoolStoreClient::check(const std::vector<std::string>& keys) {
  return request({{"op", "check"}, {"keys", keys}}, timeout_).at("value").get<bool>();
}

int64_t PoolStoreClient::getNumKeys() { return request({{"op", "count"}}, timeout_).at("value").get<int64_t>(); }

void PoolStoreClient::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void PoolStoreClient::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  request({{"op", "wait"}, {"keys", keys}}, timeout);
}

}  // namespace distmetrics::runtime::detail
