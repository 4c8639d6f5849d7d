#include "peer_store.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "../comm/backend_factory.h"
#include "distmetrics/runtime/launchers.h"
#include "distmetrics/runtime/errors.h"
#include "peer_gather.h"
#include "pool_store.h"
#include "wire.h"

namespace distmetrics::runtime::detail {

using namespace std::chrono_literals;

std::vector<std::uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }
std::string text_of(const std::vector<std::uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

bool wait_for_keys(c10d::Store& store, const std::vector<std::string>& keys, const Deadline& deadline) {
  auto pause = 1ms;
  while (true) {
    try {
      if (store.check(keys)) return true;
    } catch (const std::exception&) {
      // The store did not answer (bounded by its timeout): cut off, or gone; the deadline decides.
    }
    if (deadline.expired()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(pause, deadline.remaining()));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

void set_quietly(c10d::Store& store, const std::string& key, const nlohmann::json& value) {
  try {
    store.set(key, bytes_of(value.dump()));
  } catch (const std::exception&) {
    // rank 0 is gone; the report wait that follows says so
  }
}

std::optional<nlohmann::json> get_json(c10d::Store& store, const std::string& key) {
  try {
    if (!store.check({key})) return std::nullopt;
    return nlohmann::json::parse(text_of(store.get(key)));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

c10::intrusive_ptr<c10d::Store> StoreAddress::connect(const Deadline& deadline) const {
  const auto timeout = std::max<std::chrono::milliseconds>(deadline.remaining(), 1ms);
  if (!socket.empty()) return connect_to_private_store(socket, deadline, timeout);
  return connect_to_network_store(host, static_cast<std::uint16_t>(port), secret, deadline, timeout);
}

// A rank's heartbeat across hosts: a thread that sends one request every kBeatPeriod on a
// connection of its own (named as the rank's heartbeat), so that rank 0 hears the rank's runner
// whatever its own connection waits for. The request does a second job: it looks for the current
// job's report, so that the rank learns without traffic of its own when rank 0 has decided. Each
// beat is bounded (4 periods); a cut-off link only delays the next one.
class Heartbeat {
 public:
  explicit Heartbeat(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {
    thread_ = std::thread([this] { beat(); });
  }
  ~Heartbeat() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  void watch(const std::string& prefix) {
    const std::lock_guard<std::mutex> lock(mutex_);
    watched_ = c10::make_intrusive<c10d::PrefixStore>(prefix, store_);
    report_out_ = false;
  }
  bool report_out() const { return report_out_.load(); }

 private:
  void beat() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      const c10::intrusive_ptr<c10d::Store> watched = watched_;
      lock.unlock();
      try {
        const bool out = watched ? watched->check({"report"}) : store_->check({});
        if (watched && out) {
          const std::lock_guard<std::mutex> relock(mutex_);
          if (watched_ == watched) report_out_ = true;  // still the same job's
        }
      } catch (const std::exception&) {
        // cut off, or rank 0 is gone: rank 0 (if there) counts the silence
      }
      lock.lock();
      wake_.wait_for(lock, kBeatPeriod, [this] { return stop_; });
    }
  }
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Store> watched_;  // the current job's keys
  std::atomic<bool> report_out_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

namespace {

// Across hosts under mpirun without MASTER_ADDR: GLOO_SOCKET_IFNAME's address, else this host's
// first interface that is up and not loopback, else its name.
std::string this_host_address(const PeerLaunch& launch) {
  if (!launch.gloo_socket_ifname.empty()) {
    const std::string address = interface_address(launch.gloo_socket_ifname);
    if (address.empty()) throw ConfigError("GLOO_SOCKET_IFNAME=" + launch.gloo_socket_ifname + ": this host has no IPv4 address on it");
    return address;
  }
  const std::string address = interface_address("");
  return address.empty() ? this_host_name() : address;
}

// Rank 0's setup, said to every rank: its text, or "!why" so that the others fail with rank 0's
// reason, not a timeout.
std::string announce(const PeerLaunch& launch, const Broadcast& broadcast, const std::function<std::string()>& rank0,
                     const Deadline& deadline, const std::string& what) {
  std::string announced;
  if (launch.rank == 0) {
    try {
      announced = rank0();
    } catch (const std::exception& e) {
      announced = "!" + short_what(e);
    }
  }
  announced = broadcast(announced, deadline);
  if (!announced.empty() && announced[0] == '!') {
    throw ConfigError(launch.launcher + " launcher: rank 0 could not start the " + what + ": " + announced.substr(1));
  }
  return announced;
}

}  // namespace

PeerRendezvous::PeerRendezvous(const PeerLaunch& launch, const Broadcast& broadcast,
                               std::chrono::milliseconds connect_deadline, std::chrono::milliseconds report_grace)
    : launch_(launch), connect_deadline_(connect_deadline), report_grace_(report_grace), gloo_address_(launch.gloo_address) {
  const Deadline deadline = Deadline::after(connect_deadline_);
  if (launch_.one_host) {
    connect_privately(broadcast, deadline);
  } else {
    connect_over_network(broadcast, deadline);
  }
  check_in(deadline);
  // From now on this process's own store calls are short (set, get, check: waits poll), so each
  // is bounded by the report grace: a store cut off by a partition costs a grace, not a connect
  // deadline, per call.
  store_->setTimeout(std::max<std::chrono::milliseconds>(report_grace_, 100ms));
  if (!launch_.one_host && launch_.rank != 0) {
    try {
      heartbeat_ = std::make_unique<Heartbeat>(
          connect_to_network_store(address_.host, static_cast<std::uint16_t>(address_.port), address_.secret,
                                   Deadline::after(connect_deadline_), 4 * kBeatPeriod, launch_.rank, /*heartbeat=*/true));
    } catch (const std::exception&) {
      // Without a heartbeat rank 0 hears this rank's own messages only: a late outcome of it
      // may then be taken for silence, as before heartbeats.
    }
  }
}

PeerRendezvous::~PeerRendezvous() { close(); }

// Every rank on this host: rank 0 serves the store at a Unix socket in a private 0700 folder
// (checked by peer credentials); mpi sends its path to the others with MPI, env derives it
// from MASTER_PORT on every rank. Nothing listens on a network port.
void PeerRendezvous::connect_privately(const Broadcast& broadcast, const Deadline& deadline) {
  std::string path;
  if (find_launcher(launch_.launcher)->through_mpi) {
    path = announce(launch_, broadcast, [&] {
      // In mpirun's session folder when there is one: mpirun removes it whatever happens to
      // rank 0 (a crash, MPI_Abort), as it does Open MPI's shared memory.
      host_ = std::make_unique<PoolStoreHost>("", launch_.mpi_session_dir);
      return host_->socket_path();
    }, deadline, "private rendezvous");
  } else {
    const std::string folder = env_launch_store_folder(launch_.master_port);
    if (launch_.rank == 0) host_ = std::make_unique<PoolStoreHost>(folder);
    path = folder + "/store.sock";
  }
  try {
    store_ = connect_to_private_store(path, deadline, connect_deadline_);
  } catch (const ConfigError& e) {
    throw ConfigError(launch_.launcher + " launcher: rank " + std::to_string(launch_.rank) + ": " + e.what());
  }
  address_.socket = path;
}

// Several hosts: rank 0 serves the project's store (pool_store.h) on the rendezvous address
// alone, not on every interface (LibTorch 1.13's TCPStore cannot bind one address), and admits
// only connections that show the run's secret. env: MASTER_ADDR:MASTER_PORT and the secret
// from DISTMETRICS_RUN_SECRET (the same on every rank; never argv). mpi: with MASTER_ADDR and
// MASTER_PORT there, else this host's address on a free port; the address, port and a fresh
// secret (DISTMETRICS_RUN_SECRET when set) go to the other ranks through MPI.
void PeerRendezvous::connect_over_network(const Broadcast& broadcast, const Deadline& deadline) {
  std::string host = launch_.master_addr;
  int port = launch_.master_port;
  std::string secret = launch_.run_secret;
  if (find_launcher(launch_.launcher)->through_mpi) {
    const auto where = nlohmann::json::parse(announce(launch_, broadcast, [&] {
      if (secret.empty()) secret = random_secret();
      if (host.empty()) host = this_host_address(launch_);
      host_ = std::make_unique<PoolStoreHost>(host, static_cast<std::uint16_t>(std::max(port, 0)), secret);
      return nlohmann::json({{"host", host}, {"port", host_->port()}, {"secret", secret}}).dump();
    }, deadline, "rendezvous store"));
    host = where.at("host").get<std::string>();
    port = where.at("port").get<int>();
    secret = where.at("secret").get<std::string>();
  } else if (launch_.rank == 0) {
    try {
      host_ = std::make_unique<PoolStoreHost>(host, static_cast<std::uint16_t>(port), secret);
    } catch (const std::exception& e) {
      throw ConfigError(launch_.launcher + " launcher: rank 0 could not host the rendezvous store at MASTER_ADDR=" + host +
                        " MASTER_PORT=" + std::to_string(port) + ": " + short_what(e) +
                        " (rank 0 must run on the host MASTER_ADDR names)");
    }
  }
  address_.host = host;
  address_.port = port;
  address_.secret = secret;
  c10::intrusive_ptr<PoolStoreClient> client;
  try {
    client = connect_to_network_store(host, static_cast<std::uint16_t>(port), secret, deadline, connect_deadline_, launch_.rank);
  } catch (const ConfigError& e) {
    throw ConfigError(launch_.launcher + " launcher: rank " + std::to_string(launch_.rank) + ": " + e.what());
  }
  // Gloo binds its pairs to the address that reaches rank 0, unless GLOO_SOCKET_IFNAME says otherwise.
  if (launch_.gloo_socket_ifname.empty()) gloo_address_ = client->local_address();
  store_ = client;
}

// Every rank checks in; rank 0 waits for all of them, so a wrong WORLD_SIZE is caught here.
// Which host each rank is on, for the reports (a blamed rank is named with its host).
void PeerRendezvous::check_in(const Deadline& deadline) {
  const int rank = launch_.rank;
  store_->set("host/" + std::to_string(rank), bytes_of(this_host_name()));
  store_->set("joined/" + std::to_string(rank), bytes_of(std::to_string(launch_.world_size)));
  if (rank != 0) {
    // Rank 0's word on the start: "ok", or why the run cannot start (a rank with another WORLD_SIZE).
    if (!wait_for_keys(*store_, {"start"}, deadline)) {
      throw ConfigError(launch_.launcher + " launcher: rank " + std::to_string(rank) + ": rank 0 did not start the run within " +
                        std::to_string(connect_deadline_.count()) + " ms (is every rank started, with the same WORLD_SIZE?)");
    }
    const std::string word = text_of(store_->get("start"));
    if (word != "ok") {
      store_->add("left", 1);
      throw ConfigError(word);
    }
    return;
  }
  try {
    check_that_every_rank_joined(deadline);
  } catch (const ConfigError& e) {
    try {
      store_->set("start", bytes_of(e.what()));  // the text itself: the others throw it as it is
    } catch (const std::exception&) {
    }
    // The ranks that joined read why before the store goes (bounded).
    int joined = 0;
    for (int r = 1; r < launch_.world_size; ++r) joined += store_->check({"joined/" + std::to_string(r)}) ? 1 : 0;
    const Deadline read = Deadline::after(report_grace_);
    while (store_->add("left", 0) < joined && !read.expired()) std::this_thread::sleep_for(5ms);
    throw;
  }
  store_->set("start", bytes_of("ok"));
}

void PeerRendezvous::check_that_every_rank_joined(const Deadline& deadline) {
  const int world_size = launch_.world_size;
  std::vector<std::string> keys;
  for (int r = 0; r < world_size; ++r) keys.push_back("joined/" + std::to_string(r));
  if (!wait_for_keys(*store_, keys, deadline)) {
    std::string missing;
    for (int r = 0; r < world_size; ++r) {
      if (!store_->check({keys[r]})) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    throw ConfigError(launch_.launcher + " launcher: not every one of the " + std::to_string(world_size) +
                      " ranks joined within " + std::to_string(connect_deadline_.count()) +
                      " ms (missing: rank " + missing + "; check WORLD_SIZE, MASTER_ADDR and MASTER_PORT on them)");
  }
  for (int r = 0; r < world_size; ++r) {
    const std::string said = text_of(store_->get(keys[r]));
    if (said != std::to_string(world_size)) {
      throw ConfigError(launch_.launcher + " launcher: rank " + std::to_string(r) + " was started with a world of " +
                        said + " ranks, rank 0 with " + std::to_string(world_size) + ": start every rank with the same WORLD_SIZE");
    }
    hosts_.push_back(text_of(store_->get("host/" + std::to_string(r))));
  }
}

std::set<int> PeerRendezvous::gone_ranks() const { return host_ ? host_->gone_ranks() : std::set<int>{}; }

bool PeerRendezvous::watch_report(const std::string& prefix) {
  if (!heartbeat_) return false;
  heartbeat_->watch(prefix);
  return true;
}

bool PeerRendezvous::report_out() const { return heartbeat_ && heartbeat_->report_out(); }

std::map<int, std::chrono::milliseconds> PeerRendezvous::silent_for() const {
  return host_ ? host_->silent_for() : std::map<int, std::chrono::milliseconds>{};
}

void PeerRendezvous::say_left() {
  try {
    if (launch_.rank != 0 && store_) {
      store_->add("left", 1);
    } else if (store_) {
      const Deadline deadline = Deadline::after(report_grace_);
      auto pause = 1ms;
      while (store_->add("left", 0) < launch_.world_size - 1 && !deadline.expired()) {
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(50));
      }
    }
  } catch (const std::exception&) {
  }
}

void PeerRendezvous::stop_serving() { host_.reset(); }

void PeerRendezvous::close() {
  heartbeat_.reset();
  store_.reset();
  host_.reset();  // stops serving, removes the folder
}

}  // namespace distmetrics::runtime::detail
