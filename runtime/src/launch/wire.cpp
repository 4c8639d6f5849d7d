#include "wire.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace distmetrics::runtime::detail {
namespace {

int poll_ms(const Deadline& deadline) {
  const auto left = deadline.remaining().count();
  return left > 1000000 ? 1000000 : static_cast<int>(left);
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

void set_flags(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // fails harmlessly on Unix sockets
}

}  // namespace

LineChannel::LineChannel(int fd) : fd_(fd) { set_flags(fd_); }

LineChannel::~LineChannel() {
  if (fd_ >= 0) ::close(fd_);
}

void LineChannel::send(const nlohmann::json& message, const Deadline& deadline) {
  send_lines(message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", deadline);
}

void LineChannel::send_lines(const std::string& line, const Deadline& deadline) {
  size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = ::send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (deadline.expired()) {
        throw ChannelError("sending a message did not finish within " +
                           std::to_string(deadline.budget().count()) + " ms (the peer is not reading)");
      }
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, poll_ms(deadline));
      continue;
    }
    throw ChannelError(errno_text("sending a message failed"));
  }
}

bool LineChannel::read_available() {
  char chunk[65536];
  while (!eof_) {
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) {
      eof_ = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    eof_ = true;  // ECONNRESET and friends: the peer is gone
  }
  return !eof_;
}

std::optional<nlohmann::json> LineChannel::next() {
  const auto newline = buffer_.find('\n');
  if (newline == std::string::npos) return std::nullopt;
  std::string line = buffer_.substr(0, newline);
  buffer_.erase(0, newline + 1);
  try {
    return nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw ChannelError("malformed control message (" + std::string(e.what()) + "): " + line.substr(0, 200));
  }
}

std::optional<nlohmann::json> LineChannel::receive(const Deadline& deadline) {
  while (true) {
    if (auto message = next()) return message;
    if (eof_) throw ChannelError("the peer closed the connection");
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, poll_ms(deadline));
    if (ready > 0) {
      read_available();
      continue;
    }
    if (ready < 0 && errno == EINTR) continue;
    if (deadline.expired()) return std::nullopt;
  }
}

Listener listen_on_loopback() {
  Listener listener;
  listener.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listener.fd < 0) throw ChannelError(errno_text("socket"));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(listener.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener.fd, 128) != 0 ||
      ::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string error = errno_text("listening on 127.0.0.1");
    ::close(listener.fd);
    throw ChannelError(error);
  }
  listener.port = ntohs(addr.sin_port);
  return listener;
}

Listener listen_on_address(const std::string& address, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;  // Gloo's pairs and the ranks' addresses are IPv4 here
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) throw ChannelError("cannot resolve " + address + ": " + gai_strerror(rc));
  Listener listener;
  listener.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listener.fd < 0) {
    ::freeaddrinfo(found);
    throw ChannelError(errno_text("socket"));
  }
  int one = 1;
  ::setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  std::memcpy(&addr, found->ai_addr, sizeof(addr));
  ::freeaddrinfo(found);
  char numeric[INET_ADDRSTRLEN] = {0};
  ::inet_ntop(AF_INET, &addr.sin_addr, numeric, sizeof(numeric));
  socklen_t len = sizeof(addr);
  if (::bind(listener.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(listener.fd, 128) != 0 ||
      ::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int error = errno;
    ::close(listener.fd);
    std::string text = "listening on " + address + " (" + numeric + "):" + std::to_string(port) + ": " + std::strerror(error);
    if (error == EADDRNOTAVAIL) text += " (it is not an address of this host)";
    throw ChannelError(text);
  }
  listener.port = ntohs(addr.sin_port);
  return listener;
}

std::string interface_address(const std::string& name) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* a = list; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    const bool loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
    if (name.empty() ? (loopback || (a->ifa_flags & IFF_UP) == 0) : name != a->ifa_name) continue;
    char text[INET_ADDRSTRLEN] = {0};
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof(text));
    found = text;
  }
  ::freeifaddrs(list);
  return found;
}

std::string local_address(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || addr.sin_family != AF_INET) return "";
  char text[INET_ADDRSTRLEN] = {0};
  ::inet_ntop(AF_INET, &addr.sin_addr, text, sizeof(text));
  return text;
}

std::string peer_address(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || addr.sin_family != AF_INET) return "?";
  char text[INET_ADDRSTRLEN] = {0};
  ::inet_ntop(AF_INET, &addr.sin_addr, text, sizeof(text));
  return std::string(text) + ":" + std::to_string(ntohs(addr.sin_port));
}

int accept_connection(int listen_fd, const Deadline& deadline) {
  while (true) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) return fd;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
      throw ChannelError(errno_text("accept"));
    }
    if (deadline.expired()) return -1;
    pollfd p{listen_fd, POLLIN, 0};
    ::poll(&p, 1, poll_ms(deadline));
  }
}

int connect_to(const std::string& host, std::uint16_t port, const Deadline& deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) throw ChannelError("cannot resolve " + host + ": " + gai_strerror(rc));
  std::string last_error = "no address";
  auto pause = std::chrono::milliseconds(10);
  // Retries until the deadline: the listener may not be up yet (peers started together).
  while (true) {
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (fd < 0) continue;
      int error = 0;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        error = errno;
        if (error == EINPROGRESS) {  // a remote host: wait for it, but not past the deadline
          pollfd p{fd, POLLOUT, 0};
          socklen_t len = sizeof(error);
          if (::poll(&p, 1, poll_ms(deadline)) == 1) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
          else error = ETIMEDOUT;
        }
      }
      if (error == 0) {
        ::freeaddrinfo(found);
        return fd;
      }
      last_error = std::strerror(error);
      ::close(fd);
    }
    if (deadline.expired()) break;
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(pause, deadline.remaining()));
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
  ::freeaddrinfo(found);
  throw ChannelError("could not connect to " + host + ":" + std::to_string(port) + " within " +
                     std::to_string(deadline.budget().count()) + " ms: " + last_error);
}

namespace {
sockaddr_un unix_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    throw ChannelError("the socket path " + path + " is longer than a Unix socket allows (" +
                       std::to_string(sizeof(addr.sun_path) - 1) + " bytes): set TMPDIR to a shorter folder");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}
}  // namespace

int listen_on_unix_path(const std::string& path) {
  const sockaddr_un addr = unix_address(path);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw ChannelError(errno_text("socket"));
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 128) != 0) {
    const std::string error = errno_text(("listening on " + path).c_str());
    ::close(fd);
    throw ChannelError(error);
  }
  return fd;
}

int connect_to_unix_path(const std::string& path, const Deadline& deadline, AbsentListener absent) {
  const sockaddr_un addr = unix_address(path);
  auto pause = std::chrono::milliseconds(5);
  std::string last_error;
  while (true) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw ChannelError(errno_text("socket"));
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
    const int error = errno;
    last_error = std::strerror(error);
    ::close(fd);
    if (absent == AbsentListener::NoLonger && (error == ECONNREFUSED || error == ENOENT)) {
      throw ChannelError("nothing listens on " + path + " any more (" + last_error +
                         "): the process that made it has ended or stopped waiting for this connection");
    }
    if (deadline.expired()) break;
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(pause, deadline.remaining()));
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
  throw ChannelError("could not connect to " + path + " within " + std::to_string(deadline.budget().count()) +
                     " ms: " + last_error);
}

PeerCredentials peer_credentials(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  PeerCredentials peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof(cred)) {
    peer.pid = cred.pid;
    peer.uid = cred.uid;
  }
  return peer;
}

}  // namespace distmetrics::runtime::detail
