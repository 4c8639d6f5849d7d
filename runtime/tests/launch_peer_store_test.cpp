// The store of a peer launch (peer_store.h): ranks in threads of this process check in through
// rank 0's store as separate processes would; a wrong world size, a rank that never joins and a
// connection without the run's secret are refused with why; a task's process reaches the same
// keys from the StoreAddress.
#include <gtest/gtest.h>

#include <unistd.h>

#include <future>
#include <thread>

#include "../src/launch/peer_store.h"
#include "../src/launch/pool_store.h"
#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime::detail {
namespace {

using namespace std::chrono_literals;

struct Joined {
  std::unique_ptr<PeerRendezvous> rendezvous;
  std::string error;
};

// Every launch's rank checks in from a thread of its own, as its process would.
std::vector<Joined> join_all(const std::vector<PeerLaunch>& launches, const Broadcast& broadcast,
                             const std::vector<std::chrono::milliseconds>& connect_deadlines = {}) {
  std::vector<Joined> joined(launches.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < launches.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        const auto deadline = i < connect_deadlines.size() ? connect_deadlines[i] : std::chrono::milliseconds(10s);
        joined[i].rendezvous = std::make_unique<PeerRendezvous>(launches[i], broadcast, deadline, 500ms);
      } catch (const ConfigError& e) {
        joined[i].error = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return joined;
}

// The env launcher with every rank on this host (the private store), at a port of its own.
PeerLaunch on_this_host(int rank, int world_size) {
  PeerLaunch launch;
  launch.launcher = "env";
  launch.rank = rank;
  launch.world_size = world_size;
  launch.local_world_size = world_size;
  launch.master_addr = "127.0.0.1";
  launch.master_port = 20000 + static_cast<int>(::getpid() % 30000);  // names the private folder only
  launch.one_host = true;
  launch.gloo_address = "127.0.0.1";
  return launch;
}

std::vector<std::uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

TEST(PeerStore, RanksOnOneHostCheckInAndATaskProcessReachesTheSameKeys) {
  auto joined = join_all({on_this_host(0, 2), on_this_host(1, 2)}, nullptr);
  ASSERT_TRUE(joined[0].rendezvous) << joined[0].error;
  ASSERT_TRUE(joined[1].rendezvous) << joined[1].error;
  PeerRendezvous& rank0 = *joined[0].rendezvous;
  PeerRendezvous& rank1 = *joined[1].rendezvous;
  EXPECT_EQ(rank0.hosts(), (std::vector<std::string>{this_host_name(), this_host_name()}));
  EXPECT_TRUE(rank1.hosts().empty());  // only rank 0 gathers them
  EXPECT_EQ(rank0.address().socket, rank1.address().socket);
  EXPECT_EQ(rank0.address().socket, env_launch_store_folder(on_this_host(0, 2).master_port) + "/store.sock");
  EXPECT_EQ(rank1.gloo_address(), "127.0.0.1");
  rank1.store()->set("from/1", bytes("hello"));
  EXPECT_EQ(rank0.store()->get("from/1"), bytes("hello"));
  EXPECT_EQ(rank0.store()->get("start"), bytes("ok"));
  // A second connection from the address (what a task's child opens) sees the same keys.
  auto own = rank1.address().connect(Deadline::after(5s));
  EXPECT_EQ(own->get("from/1"), bytes("hello"));
  rank1.say_left();
  EXPECT_EQ(rank0.store()->add("left", 0), 1);
}

TEST(PeerStore, ARankWithAnotherWorldSizeIsRefusedOnEveryRank) {
  PeerLaunch odd = on_this_host(1, 3);
  auto joined = join_all({on_this_host(0, 2), odd}, nullptr);
  const std::string expected =
      "env launcher: rank 1 was started with a world of 3 ranks, rank 0 with 2: start every rank with the same WORLD_SIZE";
  EXPECT_FALSE(joined[0].rendezvous);
  EXPECT_FALSE(joined[1].rendezvous);
  EXPECT_EQ(joined[0].error, expected);
  EXPECT_EQ(joined[1].error, expected);  // rank 0's word, read from the store
}

TEST(PeerStore, ARankThatNeverJoinsIsNamed) {
  // Rank 1 waits longer than rank 0: it hears why from rank 0, not a timeout of its own.
  auto joined = join_all({on_this_host(0, 3), on_this_host(1, 3)}, nullptr, {400ms, 10s});
  EXPECT_EQ(joined[0].error,
            "env launcher: not every one of the 3 ranks joined within 400 ms (missing: rank 2; check WORLD_SIZE, "
            "MASTER_ADDR and MASTER_PORT on them)");
  EXPECT_EQ(joined[1].error, joined[0].error);
}

// Across hosts (here: rank 0's store on 127.0.0.1 as if it were a host's address), under mpi:
// rank 0 picks a free port and a secret and sends them to the others (the broadcast: a promise).
TEST(PeerStore, AcrossHostsTheStoreWantsTheRunsSecretAndSaysWhichRanksAreGone) {
  std::promise<std::string> announced;
  std::shared_future<std::string> heard = announced.get_future().share();
  Broadcast broadcast = [&](const std::string& text, const Deadline& deadline) -> std::string {
    if (!text.empty()) announced.set_value(text);  // rank 0
    if (heard.wait_for(deadline.remaining()) != std::future_status::ready) throw ConfigError("no broadcast");
    return heard.get();
  };
  std::vector<PeerLaunch> launches;
  for (int r = 0; r < 2; ++r) {
    PeerLaunch launch;
    launch.launcher = "mpi";
    launch.rank = r;
    launch.world_size = 2;
    launch.local_world_size = 1;
    launch.master_addr = "127.0.0.1";
    launches.push_back(launch);
  }
  auto joined = join_all(launches, broadcast);
  ASSERT_TRUE(joined[0].rendezvous) << joined[0].error;
  ASSERT_TRUE(joined[1].rendezvous) << joined[1].error;
  const StoreAddress address = joined[1].rendezvous->address();
  EXPECT_EQ(address.host, "127.0.0.1");
  EXPECT_GT(address.port, 0);
  EXPECT_EQ(address.secret.size(), 32u);  // a fresh one: DISTMETRICS_RUN_SECRET was not given
  EXPECT_EQ(address.secret, joined[0].rendezvous->address().secret);
  EXPECT_EQ(address.socket, "");
  EXPECT_EQ(joined[1].rendezvous->gloo_address(), "127.0.0.1");  // the address that reaches rank 0
  // A connection with another secret is refused.
  try {
    connect_to_network_store(address.host, static_cast<std::uint16_t>(address.port), "not the secret",
                             Deadline::after(3s), 1000ms);
    ADD_FAILURE() << "a connection without the run's secret was admitted";
  } catch (const ConfigError&) {
  }
  auto own = address.connect(Deadline::after(5s));  // with the secret: admitted
  own->set("k", bytes("v"));
  EXPECT_EQ(joined[0].rendezvous->store()->get("k"), bytes("v"));
  // Rank 1's own connection closes: rank 0 says it is gone.
  EXPECT_TRUE(joined[0].rendezvous->gone_ranks().empty());
  joined[1].rendezvous->close();
  std::set<int> gone;
  for (int i = 0; i < 250 && gone.empty(); ++i) {
    std::this_thread::sleep_for(20ms);
    gone = joined[0].rendezvous->gone_ranks();
  }
  EXPECT_EQ(gone, std::set<int>{1});
}

// Rank 0 hears each rank: its own connection and its heartbeat's count as that rank, only the own
// one closing makes it gone, and silence is counted against the store's latest serving pass.
TEST(PeerStore, AcrossHostsEachRankIsHeardOnItsOwnConnectionAndItsHeartbeats) {
  PoolStoreHost host("127.0.0.1", 0, "the secret");
  const auto connect = [&](int rank, bool heartbeat) {
    return connect_to_network_store("127.0.0.1", host.port(), "the secret", Deadline::after(5s), 2000ms, rank, heartbeat);
  };
  auto own1 = connect(1, false);
  auto beat1 = connect(1, true);
  auto beat2 = connect(2, true);
  auto other = connect(-1, false);  // a task's connection: not a rank's voice
  auto silence = host.silent_for();
  EXPECT_EQ(silence.count(1), 1u);  // heard as it was admitted
  EXPECT_EQ(silence.count(2), 1u);
  EXPECT_EQ(silence.count(-1), 0u);
  // Rank 1 beats while rank 2 says nothing: bounded, until rank 2's silence has grown past 300 ms.
  for (int i = 0; i < 500 && host.silent_for()[2] < 300ms; ++i) {
    beat1->add("beat/1", 1);
    other->check({"k"});  // keeps the store serving
    std::this_thread::sleep_for(10ms);
  }
  silence = host.silent_for();
  EXPECT_GE(silence[2], 300ms);
  EXPECT_LT(silence[1], silence[2]);  // heard since
  EXPECT_EQ(own1->add("beat/1", 0), beat1->add("beat/1", 0));  // one rank's keys, whichever connection
  // Its heartbeat's connection closing is not the rank gone; its own connection closing is.
  beat1.reset();
  beat2.reset();
  for (int i = 0; i < 20; ++i) {
    other->check({"k"});
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(host.gone_ranks().empty());
  own1.reset();
  std::set<int> gone;
  for (int i = 0; i < 250 && gone.empty(); ++i) {
    std::this_thread::sleep_for(20ms);
    gone = host.gone_ranks();
  }
  EXPECT_EQ(gone, std::set<int>{1});
}

}  // namespace
}  // namespace distmetrics::runtime::detail
