#include "pool_store.h"

#include <algorithm>
#include <stdexcept>

namespace distmetrics::runtime::detail {

using namespace std::chrono_literals;

namespace {
// An answer is a few hundred bytes: a client whose socket cannot take it within this budget is
// not reading (stopped, or not one of ours) and is dropped.
constexpr auto kAnswerBudget = 50ms;
}  // namespace

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

void PoolStoreServer::add_client(int rank, std::unique_ptr<LineChannel> channel) { clients_[rank] = std::move(channel); }

std::vector<int> PoolStoreServer::fds() const {
  std::vector<int> fds;
  for (const auto& [rank, client] : clients_) fds.push_back(client->fd());
  return fds;
}

void PoolStoreServer::clear() {
  data_.clear();
  waiting_.clear();
}

void PoolStoreServer::serve() {
  for (auto it = clients_.begin(); it != clients_.end();) {
    LineChannel& client = *it->second;
    bool broken = !client.read_available();
    try {
      while (auto request = client.next()) handle(client, *request);
    } catch (const std::exception&) {
      broken = true;  // a malformed request: the client is not following the protocol
    }
    if (broken) {
      waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), [&](const Waiting& w) { return w.client == &client; }),
                     waiting_.end());
      it = clients_.erase(it);
    } else {
      ++it;
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

PoolStoreClient::PoolStoreClient(std::unique_ptr<LineChannel> channel) : channel_(std::move(channel)) {}

nlohmann::json PoolStoreClient::request(nlohmann::json body, std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::uint64_t id = next_id_++;
  body["id"] = id;
  const Deadline deadline = Deadline::after(std::max(timeout, std::chrono::milliseconds(1)));
  channel_->send(body, deadline);
  while (true) {
    auto reply = channel_->receive(deadline);
    if (!reply) {
      throw std::runtime_error("the pool store did not answer '" + body.value("op", "") + "' within " +
                               std::to_string(deadline.budget().count()) + " ms (a rank that never arrived?)");
    }
    if (reply->value("id", std::uint64_t{0}) == id) return *reply;  // older ids: answers to requests that timed out
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
