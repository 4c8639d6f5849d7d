// The rank pool's rendezvous (rank_pool.cpp): its private folder and Unix socket, which accepts
// only processes that RankProcesses started (kernel peer credentials) and hosts the store.
#pragma once

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pool_store.h"
#include "pool_timing.h"
#include "process.h"
#include "wire.h"

namespace distmetrics::runtime::detail {

// --- Rendezvous -----------------------------------------------------------------------------------

// A connection that said hello, from a process the kernel vouches for.
struct Hello {
  std::string role;  // "control" or "store"
  int rank = -1;
  pid_t pid = 0;
  std::unique_ptr<detail::LineChannel> channel;
};

class Rendezvous {
 public:
  Rendezvous() {
    const char* tmp = std::getenv("TMPDIR");
    std::string base = tmp && *tmp ? tmp : "/tmp";
    std::string pattern = base + "/distmetrics-pool-XXXXXX";
    // A Unix socket's path holds at most 107 bytes (sockaddr_un): a deep TMPDIR (pytest's
    // per-test folders) falls back to /tmp, which the 0700 folder keeps as private.
    if ((pattern + "/pool.sock").size() >= sizeof(sockaddr_un{}.sun_path)) {
      base = "/tmp";
      pattern = base + "/distmetrics-pool-XXXXXX";
    }
    if (::mkdtemp(pattern.data()) == nullptr) {  // mkdtemp makes it 0700: ours alone
      throw ConfigError("cannot create the rank pool's private folder in " + base + ": " + std::strerror(errno) +
                        " (set TMPDIR to a writable folder)");
    }
    dir_ = pattern;
    try {
      listen_fd_ = detail::listen_on_unix_path(socket_path());
    } catch (...) {
      remove_dir();
      throw;
    }
  }

  ~Rendezvous() {
    stop_listening();
    remove_dir();
  }

  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  const std::string& dir() const { return dir_; }
  std::string socket_path() const { return dir_ + "/pool.sock"; }
  int listen_fd() const { return listen_fd_; }
  int rejected() const { return rejected_; }

  // Accepts new connections and reads their hellos. A connection whose peer is not of our uid,
  // or that `trusted(pid, rank)` does not vouch for, or that says anything else, is closed.
  template <typename Trusted>
  std::vector<Hello> accept_hellos(Trusted trusted) {
    while (true) {
      const int fd = detail::accept_connection(listen_fd_, Deadline::after(0ms));
      if (fd < 0) break;
      const detail::PeerCredentials peer = detail::peer_credentials(fd);
      if (peer.uid != ::geteuid() || peer.pid <= 0) {
        ::close(fd);
        ++rejected_;
        continue;
      }
      pending_.push_back({peer.pid, std::make_unique<detail::LineChannel>(fd)});
    }
    std::vector<Hello> hellos;
    for (size_t i = 0; i < pending_.size();) {
      auto& [pid, channel] = pending_[i];
      channel->read_available();
      std::optional<nlohmann::json> hello;
      bool bad = false;
      try {
        hello = channel->next();
      } catch (const detail::ChannelError&) {
        bad = true;
      }
      if (!bad && !hello && !channel->at_eof()) {
        ++i;
        continue;
      }
      const int rank = hello ? hello->value("rank", -1) : -1;
      const std::string role = hello ? hello->value("role", "") : "";
      if (bad || !hello || hello->value("type", "") != "hello" || (role != "control" && role != "store") ||
          !trusted(pid, rank)) {
        ++rejected_;
      } else {
        hellos.push_back({role, rank, pid, std::move(channel)});
      }
      pending_.erase(pending_.begin() + static_cast<long>(i));
    }
    return hellos;
  }

  std::vector<int> pending_fds() const {
    std::vector<int> fds;
    for (const auto& p : pending_) fds.push_back(p.second->fd());
    return fds;
  }

  // Listens again on the same path, for the replacements of ranks ended alone after a crash.
  void listen_again() {
    if (listen_fd_ < 0) listen_fd_ = detail::listen_on_unix_path(socket_path());
  }

  // Once every rank is in: nobody else can connect (the socket file is gone, the port closed).
  void stop_listening() {
    if (listen_fd_ >= 0) {
      ::close(listen_fd_);
      listen_fd_ = -1;
      ::unlink(socket_path().c_str());
    }
    pending_.clear();
  }

  detail::PoolStoreServer store;

 private:
  void remove_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::string dir_;
  int listen_fd_ = -1;
  int rejected_ = 0;
  std::vector<std::pair<pid_t, std::unique_ptr<detail::LineChannel>>> pending_;
};

// --- The protocol with one worker ---------------------------------------------------------------

}  // namespace distmetrics::runtime::detail
