// The pool's rendezvous store as c10d sees it: a PoolStoreClient over a PoolStoreHost, and (torch
// 2.8 on, where c10d::Store::clone() is pure virtual) its clones, which share the connection.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "../src/launch/pool_store.h"

namespace distmetrics::runtime::detail {
namespace {

using namespace std::chrono_literals;

std::vector<std::uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

TEST(PoolStore, AClientSetsGetsAndCountsThroughTheHost) {
  PoolStoreHost host;
  auto client = connect_to_private_store(host.socket_path(), Deadline::after(10s), 5000ms);
  client->set("k", bytes("value"));
  EXPECT_EQ(client->get("k"), bytes("value"));
  EXPECT_EQ(client->add("n", 3), 3);
  EXPECT_EQ(client->add("n", 4), 7);
  EXPECT_TRUE(client->check({"k", "n"}));
  EXPECT_FALSE(client->check({"absent"}));
  EXPECT_EQ(client->getNumKeys(), 2);
}

#if DISTMETRICS_C10D_STORE_HAS_CLONE
TEST(PoolStore, ACloneSeesTheSameKeysAndWorksFromAnotherThread) {
  PoolStoreHost host;
  auto client = connect_to_private_store(host.socket_path(), Deadline::after(10s), 5000ms);
  client->set("k", bytes("from the original"));
  c10::intrusive_ptr<c10d::Store> copy = client->clone();
  ASSERT_TRUE(copy);
  EXPECT_NE(copy.get(), static_cast<c10d::Store*>(client.get()));
  EXPECT_EQ(copy->getTimeout(), client->getTimeout());
  EXPECT_EQ(copy->get("k"), bytes("from the original"));
  // 2 x 50 adds from two threads, one on each store: every one counted once.
  std::thread other([&] {
    for (int i = 0; i < 50; ++i) copy->add("count", 1);
  });
  for (int i = 0; i < 50; ++i) client->add("count", 1);
  other.join();
  EXPECT_EQ(client->add("count", 0), 100);
  copy->set("back", bytes("from the clone"));
  EXPECT_EQ(client->get("back"), bytes("from the clone"));
}
#endif

}  // namespace
}  // namespace distmetrics::runtime::detail
