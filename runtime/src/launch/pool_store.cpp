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

// --- A private store for a peer launch on one host --------------------------------------------------

namespace {

// $TMPDIR, or /tmp when the socket's path would be too long for a Unix socket (107 bytes).
std::string temp_base(size_t room) {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp ? tmp : "/tmp";
  if (base.size() + room >= sizeof(sockaddr_un{}.sun_path)) base = "/tmp";
  return base;
}

constexpr size_t kFolderRoom = 64;  // "/distmetrics-peer-<uid>-<port>/store.sock" and the like

// Whether `folder` is a directory (not a link) of this user that nobody else may enter.
// nullopt: it does not exist; otherwise the reason it cannot be trusted, or "" when it can.
std::optional<std::string> distrust_of_folder(const std::string& folder) {
  struct stat info {};
  if (::lstat(folder.c_str(), &info) != 0) {
    if (errno == ENOENT) return std::nullopt;
    return std::string(std::strerror(errno));
  }
  if (!S_ISDIR(info.st_mode)) return std::string("it is not a directory");
  if (info.st_uid != ::geteuid()) return "it belongs to uid " + std::to_string(info.st_uid) + ", not to this user";
  if ((info.st_mode & 077) != 0) return std::string("others may enter it (its mode is not 0700)");
  return std::string();
}

}  // namespace

std::string env_launch_store_folder(int master_port) {
  return temp_base(kFolderRoom) + "/distmetrics-peer-" + std::to_string(::geteuid()) + "-" + std::to_string(master_port);
}

PoolStoreHost::PoolStoreHost(const std::string& folder, const std::string& base) {
  if (folder.empty()) {
    const bool base_fits = !base.empty() && base.size() + kFolderRoom < sizeof(sockaddr_un{}.sun_path);
    std::string pattern = (base_fits ? base : temp_base(kFolderRoom)) + "/distmetrics-peer-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {  // 0700: ours alone
      throw ConfigError("cannot create the peer launch's private folder " + pattern + ": " + std::strerror(errno) +
                        " (set TMPDIR to a writable folder)");
    }
    folder_ = pattern;
  } else {
    if (::mkdir(folder.c_str(), 0700) != 0) {
      if (errno != EEXIST) {
        throw ConfigError("cannot create the peer launch's private folder " + folder + ": " + std::strerror(errno) +
                          " (set TMPDIR to a writable folder)");
      }
      // Left by an earlier run that ended without cleaning up, or in use by a run on the same port.
      if (auto distrust = distrust_of_folder(folder); distrust && !distrust->empty()) {
        throw ConfigError("the peer launch's private folder " + folder + " exists and cannot be used: " + *distrust +
                          " (remove it, or use another MASTER_PORT)");
      }
      const std::string stale_socket = folder + "/store.sock";
      if (::access(stale_socket.c_str(), F_OK) == 0) {
        try {
          ::close(connect_to_unix_path(stale_socket, Deadline::after(std::chrono::milliseconds(0))));
          throw ConfigError("another run already serves its rendezvous at " + stale_socket +
                            " (MASTER_PORT in use on this host): use another MASTER_PORT");
        } catch (const ChannelError&) {
          ::unlink(stale_socket.c_str());  // nobody answers: an earlier run's leftover
        }
      }
    }
    folder_ = folder;
  }
  try {
    listen_fd_ = listen_on_unix_path(socket_path());
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw ChannelError(std::string("pipe: ") + std::strerror(errno));
  } catch (const ChannelError& e) {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);
    throw ConfigError("cannot serve the peer launch's rendezvous in " + folder_ + ": " + e.what());
  }
  thread_ = std::thread([this] { serve_loop(); });
}

PoolStoreHost::PoolStoreHost(const std::string& address, std::uint16_t port, std::string secret)
    : secret_(std::move(secret)), address_(address) {
  if (secret_.empty()) throw ConfigError("the rendezvous store on the network needs the run's secret");
  try {
    const Listener listener = listen_on_address(address, port);
    listen_fd_ = listener.fd;
    port_ = listener.port;
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw ChannelError(std::string("pipe: ") + std::strerror(errno));
  } catch (const ChannelError& e) {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    throw ConfigError("cannot serve the rendezvous store: " + std::string(e.what()));
  }
  thread_ = std::thread([this] { serve_loop(); });
}

namespace {
// Equal texts, in a time that does not depend on where they differ.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char differ = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) differ |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return differ == 0;
}
}  // namespace

std::set<int> PoolStoreHost::gone_ranks() const {
  const std::lock_guard<std::mutex> lock(gone_mutex_);
  return gone_;
}

std::map<int, std::chrono::milliseconds> PoolStoreHost::silent_for() const {
  const std::lock_guard<std::mutex> lock(gone_mutex_);
  std::map<int, std::chrono::milliseconds> silence;
  for (const auto& [rank, heard] : heard_of_rank_) {
    silence[rank] = std::max(std::chrono::milliseconds(0),
                             std::chrono::duration_cast<std::chrono::milliseconds>(last_pass_ - heard));
  }
  return silence;
}

void PoolStoreHost::admit(int& next_client) {
  for (size_t i = 0; i < pending_.size();) {
    Pending& p = pending_[i];
    std::string refused;
    bool admitted = false;
    int hello_rank = -1;
    bool heartbeat = false;
    try {
      const bool open = p.channel->read_available();
      if (auto hello = p.channel->next()) {
        if (hello->value("op", "") != "hello" || !hello->contains("secret")) refused = "it sent no secret";
        else if (!same_secret(hello->value("secret", ""), secret_)) refused = "it sent another secret";
        else {
          admitted = true;
          hello_rank = hello->value("rank", -1);
          heartbeat = hello->value("role", "") == "heartbeat";
        }
      } else if (!open) {
        refused = "it closed the connection before showing the run's secret";
      } else if (p.deadline.expired()) {
        refused = "it showed no secret within " + std::to_string(kHelloBudget.count()) + " ms";
      }
    } catch (const ChannelError&) {
      refused = "it sent something that is not a hello";
    }
    if (admitted) {
      try {
        const int rank = hello_rank;
        p.channel->send({{"ok", true}}, Deadline::after(kAnswerBudget));
        if (rank >= 0) {
          (heartbeat ? beat_of_client_ : rank_of_client_)[next_client] = rank;
          const std::lock_guard<std::mutex> lock(gone_mutex_);
          heard_of_rank_[rank] = last_pass_ = std::chrono::steady_clock::now();
        }
        server_.add_client(next_client++, std::move(p.channel));
      } catch (const ChannelError&) {
      }
    } else if (refused.empty()) {
      ++i;
      continue;
    } else {
      ++rejected_;
      std::cerr << "distmetrics: the rendezvous store at " << address_ << ":" << port_ << " refused a connection from "
                << p.from << ": " << refused << " (every rank needs the run's DISTMETRICS_RUN_SECRET)\n";
    }
    pending_.erase(pending_.begin() + static_cast<long>(i));
  }
}

PoolStoreHost::~PoolStoreHost() {
  if (thread_.joinable()) {
    const char byte = 0;
    while (::write(wake_[1], &byte, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  for (int fd : {listen_fd_, wake_[0], wake_[1]}) if (fd >= 0) ::close(fd);
  std::error_code ignored;
  std::filesystem::remove_all(folder_, ignored);
}

void PoolStoreHost::serve_loop() {
  int next_client = 0;
  while (true) {
    std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (int fd : server_.fds()) fds.push_back({fd, POLLIN, 0});
    for (const auto& p : pending_) fds.push_back({p.channel->fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), pending_.empty() ? 200 : 20);
    if (fds[0].revents != 0) return;
    while (true) {
      const int fd = accept_connection(listen_fd_, Deadline::after(std::chrono::milliseconds(0)));
      if (fd < 0) break;
      if (!secret_.empty()) {  // network mode: admitted once it shows the secret
        pending_.push_back({std::make_unique<LineChannel>(fd), peer_address(fd), Deadline::after(kHelloBudget)});
        continue;
      }
      const PeerCredentials peer = peer_credentials(fd);
      if (peer.uid != ::geteuid() || peer.pid <= 0) {
        ::close(fd);
        ++rejected_;
        continue;
      }
      server_.add_client(next_client++, std::make_unique<LineChannel>(fd));
    }
    if (!pending_.empty()) admit(next_client);
    server_.serve();
    if (!secret_.empty()) {
      // Each rank's last message (on its own connection or its heartbeat's), against this pass.
      const std::lock_guard<std::mutex> lock(gone_mutex_);
      last_pass_ = std::chrono::steady_clock::now();
      for (const auto& [client, heard] : server_.heard()) {
        int rank = -1;
        if (auto own = rank_of_client_.find(client); own != rank_of_client_.end()) rank = own->second;
        else if (auto beat = beat_of_client_.find(client); beat != beat_of_client_.end()) rank = beat->second;
        if (rank < 0) continue;
        auto& last = heard_of_rank_[rank];
        last = std::max(last, heard);
      }
    }
    for (auto it = beat_of_client_.begin(); it != beat_of_client_.end();) {
      it = server_.has_client(it->first) ? std::next(it) : beat_of_client_.erase(it);
    }
    for (auto it = rank_of_client_.begin(); it != rank_of_client_.end();) {
      if (server_.has_client(it->first)) {
        ++it;
        continue;
      }
      const std::lock_guard<std::mutex> lock(gone_mutex_);
      gone_.insert(it->second);
      it = rank_of_client_.erase(it);
    }
  }
}

c10::intrusive_ptr<PoolStoreClient> connect_to_network_store(const std::string& host, std::uint16_t port,
                                                             const std::string& secret, const Deadline& deadline,
                                                             std::chrono::milliseconds timeout, int rank, bool heartbeat) {
  const std::string where = host + ":" + std::to_string(port);
  int fd = -1;
  try {
    fd = connect_to(host, port, deadline);
  } catch (const ChannelError& e) {
    throw ConfigError("cannot reach the rendezvous store: " + std::string(e.what()) + " (did rank 0 start?)");
  }
  auto channel = std::make_unique<LineChannel>(fd);
  std::optional<nlohmann::json> welcome;
  try {
    nlohmann::json hello = {{"op", "hello"}, {"secret", secret}, {"rank", rank}};
    if (heartbeat) hello["role"] = "heartbeat";
    channel->send(hello, deadline);
    welcome = channel->receive(Deadline::after(std::max(deadline.remaining(), kHelloBudget)));
  } catch (const ChannelError&) {
    throw ConfigError("the rendezvous store at " + where +
                      " refused this rank (is DISTMETRICS_RUN_SECRET the same on every rank?)");
  }
  if (!welcome || !welcome->value("ok", false)) {
    throw ConfigError("the rendezvous store at " + where + " did not admit this rank in time");
  }
  auto client = c10::make_intrusive<PoolStoreClient>(std::move(channel));
  client->setTimeout(timeout);
  return client;
}

c10::intrusive_ptr<PoolStoreClient> connect_to_private_store(const std::string& socket_path, const Deadline& deadline,
                                                             std::chrono::milliseconds timeout) {
  const std::string folder = socket_path.substr(0, socket_path.rfind('/'));
  auto pause = std::chrono::milliseconds(5);
  while (true) {
    const auto distrust = distrust_of_folder(folder);
    if (distrust && !distrust->empty()) {
      throw ConfigError("the rendezvous folder " + folder + " cannot be trusted: " + *distrust);
    }
    if (distrust) break;  // exists and is ours alone
    if (deadline.expired()) {
      throw ConfigError("the rendezvous folder " + folder + " did not appear within " +
                        std::to_string(deadline.budget().count()) + " ms (did rank 0 start?)");
    }
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(pause, deadline.remaining()));
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
  int fd = -1;
  try {
    fd = connect_to_unix_path(socket_path, deadline);
  } catch (const ChannelError& e) {
    throw ConfigError(std::string("cannot reach the rendezvous: ") + e.what() + " (did rank 0 start?)");
  }
  auto client = c10::make_intrusive<PoolStoreClient>(std::make_unique<LineChannel>(fd));
  client->setTimeout(timeout);
  return client;
}

}  // namespace distmetrics::runtime::detail
