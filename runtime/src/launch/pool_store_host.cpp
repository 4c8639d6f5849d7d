// The pool store's host for a peer launch on one host (pool_store.h, PoolStoreHost): a private
// folder and Unix socket that only this job's ranks may join.
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
