// The control channel between a supervisor and its workers: a Unix socket in the pool's private
// directory (processes started by mpirun, which closes inherited descriptors, connect too), one
// JSON message per line, every read and write bounded by a deadline. TCP on loopback remains for
// the peer launch modes' helpers.
#pragma once

#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "distmetrics/runtime/deadline.h"

namespace distmetrics::runtime::detail {

// The peer closed the connection, or a read or write failed or passed its deadline.
class ChannelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class LineChannel {
 public:
  explicit LineChannel(int fd);  // takes ownership; made non-blocking and close-on-exec
  ~LineChannel();
  LineChannel(const LineChannel&) = delete;
  LineChannel& operator=(const LineChannel&) = delete;

  int fd() const { return fd_; }
  bool at_eof() const { return eof_; }

  void send(const nlohmann::json& message, const Deadline& deadline);
  // Sends text that already holds whole messages, each ending with '\n' (a batch in one write).
  void send_lines(const std::string& lines, const Deadline& deadline);
  // Reads what the socket holds without blocking; returns false once the peer has closed.
  bool read_available();
  // The next complete message already read, if any. Throws ChannelError on a malformed line.
  std::optional<nlohmann::json> next();
  // Waits for the next message. nullopt when the deadline passes; ChannelError at EOF.
  std::optional<nlohmann::json> receive(const Deadline& deadline);

 private:
  int fd_;
  bool eof_ = false;
  std::string buffer_;
};

// A listening socket on 127.0.0.1 with a port chosen by the kernel.
struct Listener {
  int fd = -1;
  std::uint16_t port = 0;
};
Listener listen_on_loopback();
// A listening TCP socket bound to `address` alone (numeric, or a name resolving to an IPv4
// address of this host), not every interface; port 0: the kernel chooses.
Listener listen_on_address(const std::string& address, std::uint16_t port);
// The IPv4 address of the network interface `name` ("eth0"), or, for "", of the first interface
// that is up and not loopback; "" when there is none.
std::string interface_address(const std::string& name);
// This end's IPv4 address of a TCP connection ("" when not one): the interface that reaches the peer.
std::string local_address(int fd);
// "10.77.0.3:43122": who is at the other end of a TCP connection ("?" when unknown).
std::string peer_address(int fd);
// A connection, or -1 when none arrives by the deadline.
int accept_connection(int listen_fd, const Deadline& deadline);
int connect_to(const std::string& host, std::uint16_t port, const Deadline& deadline);

// A listening Unix stream socket at `path` (which must not exist yet).
int listen_on_unix_path(const std::string& path);
// What a connection to a Unix socket that is not there, or that nothing listens on, means: not
// yet (a peer's store that has yet to start: retried until the deadline), or no longer (a rank
// pool's worker, whose supervisor listened before starting it: its supervisor ended, or gave up on
// this start, and waiting the deadline out would only keep an orphan alive).
enum class AbsentListener { NotYet, NoLonger };
// A connection to the Unix socket at `path`, retried until the deadline (as `absent` says).
int connect_to_unix_path(const std::string& path, const Deadline& deadline,
                         AbsentListener absent = AbsentListener::NotYet);

// Who is at the other end of a Unix socket, as the kernel says (SO_PEERCRED): not what the peer
// claims. pid 0 when the kernel cannot say.
struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = static_cast<uid_t>(-1);
};
PeerCredentials peer_credentials(int fd);

}  // namespace distmetrics::runtime::detail
