// The launch environment of a peer rank (peer_env.h): what torchrun-style variables and
// mpirun's give, and a clear error naming the variable for each thing that is wrong.
#include <gtest/gtest.h>

#include <map>

#include "../src/launch/peer_env.h"
#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime::detail {
namespace {

using Vars = std::map<std::string, std::string>;

EnvLookup lookup(const Vars& vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

// Two hosts, torchrun-style: rank 2 of 4, the second on its host.
Vars across_hosts() {
  return {{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
          {"MASTER_ADDR", "10.77.0.1"}, {"MASTER_PORT", "29500"}, {"DISTMETRICS_RUN_SECRET", "s3cret"},
          {"GLOO_SOCKET_IFNAME", "veth1"}};
}

std::string env_error(const Vars& vars, const std::string& host = "h2") {
  try {
    read_env_launch(lookup(vars), host);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(PeerEnv, ReadsEveryVariableAcrossHosts) {
  const PeerLaunch launch = read_env_launch(lookup(across_hosts()), "h2");
  EXPECT_EQ(launch.launcher, "env");
  EXPECT_EQ(launch.rank, 2);
  EXPECT_EQ(launch.world_size, 4);
  EXPECT_EQ(launch.local_rank, 1);
  EXPECT_EQ(launch.local_world_size, 2);
  EXPECT_EQ(launch.master_addr, "10.77.0.1");
  EXPECT_EQ(launch.master_port, 29500);
  EXPECT_FALSE(launch.one_host);
  EXPECT_EQ(launch.gloo_address, "");  // several hosts: the interface's, or what reaches rank 0
  EXPECT_EQ(launch.run_secret, "s3cret");
  EXPECT_EQ(launch.gloo_socket_ifname, "veth1");
}

TEST(PeerEnv, OneHostWhenTheRendezvousIsLoopbackOrThisHostWithEveryRank) {
  const PeerLaunch loopback = read_env_launch(
      lookup({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}}), "h1");
  EXPECT_TRUE(loopback.one_host);
  EXPECT_EQ(loopback.local_rank, 0);         // LOCAL_RANK unset: 0
  EXPECT_EQ(loopback.local_world_size, 2);   // LOCAL_WORLD_SIZE unset: the world
  EXPECT_EQ(loopback.gloo_address, "127.0.0.1");
  EXPECT_EQ(loopback.run_secret, "");        // one host: no secret needed
  const Vars named{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "h1"}, {"MASTER_PORT", "29500"}};
  EXPECT_TRUE(read_env_launch(lookup(named), "h1").one_host);
  // This host's name, but LOCAL_WORLD_SIZE does not say every rank is here: across hosts (and then
  // the secret is needed).
  Vars unsure = named;
  unsure.erase("LOCAL_WORLD_SIZE");
  EXPECT_NE(env_error(unsure, "h1").find("DISTMETRICS_RUN_SECRET"), std::string::npos) << env_error(unsure, "h1");
}

TEST(PeerEnv, EachWrongVariableIsAClearError) {
  Vars vars = across_hosts();
  vars.erase("RANK");
  EXPECT_EQ(env_error(vars), "env launcher: RANK is not set (a torchrun-style launcher sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT)");

  vars = across_hosts();
  vars["WORLD_SIZE"] = "four";
  EXPECT_EQ(env_error(vars), "env launcher: WORLD_SIZE=four is not a non-negative integer");
  vars["WORLD_SIZE"] = "-2";
  EXPECT_EQ(env_error(vars), "env launcher: WORLD_SIZE=-2 is not a non-negative integer");
  vars["WORLD_SIZE"] = "4x";
  EXPECT_EQ(env_error(vars), "env launcher: WORLD_SIZE=4x is not a non-negative integer");
  vars["WORLD_SIZE"] = "0";
  EXPECT_EQ(env_error(vars), "env launcher: rank 2 is not in a world of 0");

  vars = across_hosts();
  vars["RANK"] = "4";  // RANK >= WORLD_SIZE
  EXPECT_EQ(env_error(vars), "env launcher: rank 4 is not in a world of 4");

  vars = across_hosts();
  vars.erase("MASTER_ADDR");
  EXPECT_EQ(env_error(vars), "env launcher: MASTER_ADDR is not set (a torchrun-style launcher sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT)");

  vars = across_hosts();
  vars.erase("MASTER_PORT");
  EXPECT_EQ(env_error(vars), "env launcher: MASTER_PORT is not set (a torchrun-style launcher sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT)");
  for (const char* port : {"0", "65536"}) {
    vars["MASTER_PORT"] = port;
    EXPECT_EQ(env_error(vars), "env launcher: MASTER_PORT must be a port in 1..65535") << port;
  }

  vars = across_hosts();
  vars["LOCAL_RANK"] = "one";
  EXPECT_EQ(env_error(vars), "env launcher: LOCAL_RANK=one is not a non-negative integer");

  vars = across_hosts();
  vars.erase("DISTMETRICS_RUN_SECRET");
  const std::string secret = env_error(vars);
  EXPECT_EQ(secret.rfind("env launcher: ranks on several hosts need the run's secret: set DISTMETRICS_RUN_SECRET", 0), 0u) << secret;
}

TEST(PeerEnv, MpiTakesRankAndSizeFromMpiAndTheRestFromOpenMpi) {
  const PeerLaunch launch = read_mpi_launch(
      lookup({{"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
              {"OMPI_MCA_orte_jobfam_session_dir", "/tmp/ompi.h1.0/jf.1"}}),
      /*rank=*/3, /*world_size=*/4, /*ranks_on_node=*/2);
  EXPECT_EQ(launch.launcher, "mpi");
  EXPECT_EQ(launch.rank, 3);
  EXPECT_EQ(launch.world_size, 4);
  EXPECT_EQ(launch.local_rank, 1);
  EXPECT_EQ(launch.local_world_size, 2);
  EXPECT_FALSE(launch.one_host);
  EXPECT_EQ(launch.master_addr, "");  // rank 0 picks this host's address and a free port
  EXPECT_EQ(launch.master_port, -1);
  EXPECT_EQ(launch.mpi_session_dir, "/tmp/ompi.h1.0/jf.1");

  // Every rank on this node: the private store; MASTER_ADDR is taken only with MASTER_PORT.
  const PeerLaunch one = read_mpi_launch(lookup({{"MASTER_ADDR", "10.77.0.1"}}), 0, 2, 2);
  EXPECT_TRUE(one.one_host);
  EXPECT_EQ(one.gloo_address, "127.0.0.1");
  EXPECT_EQ(one.master_addr, "");
  const PeerLaunch both = read_mpi_launch(lookup({{"MASTER_ADDR", "10.77.0.1"}, {"MASTER_PORT", "29511"}}), 0, 3, 1);
  EXPECT_EQ(both.master_addr, "10.77.0.1");
  EXPECT_EQ(both.master_port, 29511);

  try {
    read_mpi_launch(lookup({{"OMPI_COMM_WORLD_LOCAL_RANK", "x"}}), 0, 2, 2);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "mpi launcher: OMPI_COMM_WORLD_LOCAL_RANK=x is not a non-negative integer");
  }
  try {
    read_mpi_launch(lookup({}), 2, 2, 2);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "mpi launcher: rank 2 is not in a world of 2");
  }
}

}  // namespace
}  // namespace distmetrics::runtime::detail
