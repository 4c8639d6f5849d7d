// The launcher tables (launchers.h): which environment says which launcher started a process (the
// variables Open MPI's mpirun and torchrun-style launchers set, docs/runtime.md), that every
// backend names launchers the tables know, and the errors for a name they do not know.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/launchers.h"
#include "distmetrics/runtime/peer_runner.h"

namespace distmetrics::runtime {
namespace {

// Sets (or unsets) environment variables for one test and puts back what was there.
class ScopedEnv {
 public:
  void set(const std::string& name, const std::optional<std::string>& value) {
    const char* old = std::getenv(name.c_str());
    saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
    if (value) setenv(name.c_str(), value->c_str(), 1);
    else unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) setenv(it->first.c_str(), it->second->c_str(), 1);
      else unsetenv(it->first.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

void clear_launch_env(ScopedEnv& env) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "WORLD_SIZE", "RANK"}) env.set(name, std::nullopt);
}

TEST(Launchers, ThePlainCommandIsLocalAndMpirunsOrTorchrunsEnvironmentNamesItsLauncher) {
  ScopedEnv env;
  clear_launch_env(env);
  EXPECT_EQ(detect_launcher(), "");
  env.set("WORLD_SIZE", "2");  // WORLD_SIZE alone is not torchrun's environment
  EXPECT_EQ(detect_launcher(), "");
  env.set("RANK", "1");
  EXPECT_EQ(detect_launcher(), "env");
  env.set("OMPI_COMM_WORLD_SIZE", "2");  // mpirun's own variable wins over the generic pair
  EXPECT_EQ(detect_launcher(), "mpi");

  EXPECT_EQ(local_launcher().name, "local");
  EXPECT_FALSE(local_launcher().peers);
  ASSERT_NE(find_launcher("mpi"), nullptr);
  EXPECT_TRUE(find_launcher("mpi")->peers);
  EXPECT_TRUE(find_launcher("mpi")->through_mpi);
  ASSERT_NE(find_launcher("env"), nullptr);
  EXPECT_TRUE(find_launcher("env")->peers);
  EXPECT_FALSE(find_launcher("env")->through_mpi);
  EXPECT_EQ(find_launcher("torchrun"), nullptr);
  EXPECT_EQ(launcher_names(), (std::vector<std::string>{"local", "mpi", "env"}));
}

TEST(Launchers, EveryBackendNamesAPeerLauncherAndAPoolLaunchOfTheTables) {
  for (const auto& backend : backends()) {
    for (const auto& name : backend.peer_launchers) {
      const Launcher* launcher = find_launcher(name);
      ASSERT_NE(launcher, nullptr) << backend.name << " names peer launcher '" << name << "'";
      EXPECT_TRUE(launcher->peers) << backend.name << ": '" << name << "' does not start peers";
    }
    EXPECT_NO_THROW(find_pool_launch(backend.pool_launch)) << backend.name;
  }
  EXPECT_FALSE(direct_pool_launch().through_mpirun);
  EXPECT_TRUE(find_pool_launch("mpirun").through_mpirun);
  std::set<std::string> names;
  for (const auto& p : pool_launches()) EXPECT_TRUE(names.insert(p.name).second) << "pool launch '" << p.name << "' twice";
}

TEST(Launchers, AnUnknownNameIsAClearErrorListingTheKnownOnes) {
  try {
    find_pool_launch("mpiexec");
    FAIL() << "find_pool_launch accepted 'mpiexec'";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'mpiexec'"), std::string::npos) << what;
    EXPECT_NE(what.find("direct"), std::string::npos) << what;
    EXPECT_NE(what.find("mpirun"), std::string::npos) << what;
  }
  // The local launcher supervises pools: a peer runner refuses it before reading any environment.
  try {
    PeerRunner runner(PeerOptions{"local"});
    FAIL() << "a peer runner started under the local launcher";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("\"local\""), std::string::npos) << what;
    EXPECT_NE(what.find("mpi"), std::string::npos) << what;
    EXPECT_NE(what.find("env"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace distmetrics::runtime
