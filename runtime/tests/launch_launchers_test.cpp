// The launcher table (launchers.h): which environment says which launcher started a process (the
// variables Open MPI's mpirun and torchrun-style launchers set, docs/runtime.md), that every
// backend names launchers the table knows, the errors for a name it does not know, docs/runtime.md's
// listing of it, and that no source outside the table spells a launcher's name.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/errors.h"
#include "distmetrics/runtime/launchers.h"
#include "distmetrics/runtime/peer_runner.h"
#include "distmetrics/runtime/rank_pool.h"

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

TEST(Launchers, EveryBackendNamesAPeerLauncherAndAPoolLaunchOfTheTable) {
  for (const auto& backend : backends()) {
    for (const auto& name : backend.peer_launchers) {
      const Launcher* launcher = find_launcher(name);
      ASSERT_NE(launcher, nullptr) << backend.name << " names peer launcher '" << name << "'";
      EXPECT_TRUE(launcher->peers) << backend.name << ": '" << name << "' does not start peers";
    }
    EXPECT_NO_THROW(find_pool_launch(backend.pool_launch)) << backend.name;
  }
  EXPECT_EQ(find_backend("gloo")->pool_launch, "direct");
  EXPECT_EQ(find_backend("mpi")->pool_launch, "mpirun");
  EXPECT_EQ(find_backend("mpi")->peer_launchers, (std::vector<std::string>{"mpi"}));
  EXPECT_EQ(find_backend("nccl")->peer_launchers, (std::vector<std::string>{"mpi", "env"}));
  EXPECT_EQ(pool_launch_for("no-such-backend"), "direct");
}

// One entry per launcher: a pool starts its workers itself under the local launcher's entry and
// through mpirun under the mpi launcher's; no pool starts workers the env launcher's way.
TEST(Launchers, OneEntryPerLauncherCarriesHowAPoolStartsItsWorkersThatWay) {
  std::set<std::string> names;
  for (const auto& l : launchers()) {
    EXPECT_TRUE(names.insert(l.name).second) << "launcher '" << l.name << "' twice";
    if (l.pool) EXPECT_TRUE(names.insert(l.pool->name).second) << "pool launch '" << l.pool->name << "' twice";
    EXPECT_EQ(&launcher(l.id), &l) << l.name;
    EXPECT_FALSE(l.help.empty()) << l.name;
  }
  ASSERT_TRUE(local_launcher().pool);
  EXPECT_EQ(&direct_pool_launch(), &*local_launcher().pool);
  EXPECT_EQ(direct_pool_launch().name, "direct");
  EXPECT_FALSE(direct_pool_launch().through_mpirun);
  EXPECT_EQ(&find_pool_launch("mpirun"), &*launcher(LauncherId::Mpi).pool);
  EXPECT_TRUE(find_pool_launch("mpirun").through_mpirun);
  EXPECT_FALSE(launcher(LauncherId::Env).pool);
  std::vector<std::string> pools;
  for (const auto& p : pool_launches()) pools.push_back(p.name);
  EXPECT_EQ(pools, (std::vector<std::string>{"direct", "mpirun"}));
  EXPECT_EQ(launcher_error_prefix(LauncherId::Env), "env launcher: ");
  EXPECT_EQ(PoolOptions{}.launch, "direct");
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

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// docs/runtime.md lists the table, one row per launcher in table order: its name, the variables
// that detect it and its pool launch (or "—").
TEST(Launchers, DocsRuntimeListsEveryEntryOfTheTable) {
  std::istringstream doc(read_file(std::filesystem::path(DISTMETRICS_SOURCE_DIR) / "docs" / "runtime.md"));
  std::vector<std::vector<std::string>> rows;
  bool in_table = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("| launcher (`--launcher`) |", 0) == 0) in_table = true;
    else if (in_table && line.rfind("| `", 0) != 0 && line.rfind("| ---", 0) != 0) break;
    if (!in_table || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream cut(line.substr(1));
    for (std::string cell; std::getline(cut, cell, '|');) {
      while (!cell.empty() && cell.front() == ' ') cell.erase(cell.begin());
      while (!cell.empty() && cell.back() == ' ') cell.pop_back();
      cells.push_back(cell);
    }
    rows.push_back(cells);
  }
  ASSERT_EQ(rows.size(), launchers().size()) << "docs/runtime.md's launcher table";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Launcher& l = launchers()[i];
    ASSERT_EQ(rows[i].size(), 5u) << l.name;
    EXPECT_EQ(rows[i][0], "`" + l.name + "`");
    std::string detected;
    for (const auto& v : l.detected_by) detected += (detected.empty() ? "`" : ", `") + v + "`";
    EXPECT_EQ(rows[i][3], detected.empty() ? "—" : detected) << l.name;
    if (l.pool) EXPECT_EQ(rows[i][4].rfind("`" + l.pool->name + "`", 0), 0u) << rows[i][4];
    else EXPECT_EQ(rows[i][4], "—") << l.name;
  }
}

// The string literals of a C++ source, comments left out.
std::vector<std::string> string_literals(const std::string& code) {
  std::vector<std::string> found;
  for (size_t i = 0; i < code.size(); ++i) {
    if (code.compare(i, 2, "//") == 0) {
      i = code.find('\n', i);
      if (i == std::string::npos) break;
    } else if (code.compare(i, 2, "/*") == 0) {
      i = code.find("*/", i + 2);
      if (i == std::string::npos) break;
      ++i;
    } else if (code[i] == '\'') {  // a character literal: '"' is no string
      for (++i; i < code.size() && code[i] != '\''; ++i)
        if (code[i] == '\\') ++i;
    } else if (code[i] == '"') {
      std::string text;
      for (++i; i < code.size() && code[i] != '"'; ++i) {
        if (code[i] == '\\') text += code[i++];
        text += code[i];
      }
      found.push_back(text);
    }
  }
  return found;
}

// What a source may not spell: a launcher's or a pool launch's name as a whole literal, or a
// launcher named in words ("mpi launcher: ...", "(launcher env)"). "mpi" alone is also the mpi
// backend's name (backends.cpp), so only its phrases count.
std::vector<std::string> spellings_outside_the_table(const std::string& code) {
  std::vector<std::string> found;
  for (const auto& literal : string_literals(code)) {
    for (const auto& l : launchers()) {
      const bool whole = literal == l.name && !find_backend(l.name);
      const bool phrase = literal.find(l.name + " launcher") != std::string::npos ||
                          literal.find("launcher " + l.name) != std::string::npos;
      if (whole || phrase || (l.pool && literal == l.pool->name)) found.push_back("\"" + literal + "\"");
    }
  }
  return found;
}

TEST(Launchers, TheScanFindsANameSpelledInALiteralButNotInAComment) {
  EXPECT_EQ(spellings_outside_the_table("x = \"env\"; // \"local\"\n/* \"direct\" */ y = \"mpirun\";"),
            (std::vector<std::string>{"\"env\"", "\"mpirun\""}));
  EXPECT_EQ(spellings_outside_the_table("throw E(\"mpi launcher: gone\"); c = '\"'; s = \"mpi\";"),
            (std::vector<std::string>{"\"mpi launcher: gone\""}));
  EXPECT_TRUE(spellings_outside_the_table("s = \"mpirun exited\"; t = \"environment\";").empty());
}

// No source of the tree outside the table spells a launcher's name (tests excepted): code asks
// the table, or names an entry by its LauncherId.
TEST(Launchers, NoSourceOutsideTheTableSpellsALaunchersName) {
  namespace fs = std::filesystem;
  const fs::path root(DISTMETRICS_SOURCE_DIR);
  const fs::path table = root / "runtime" / "src" / "launchers.cpp";
  size_t scanned = 0;
  for (const char* part : {"runtime", "harness", "plugin", "app", "metrics", "pyhost", "fixtures"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / part)) {
      const auto& path = entry.path();
      if (!entry.is_regular_file() || (path.extension() != ".cpp" && path.extension() != ".h")) continue;
      if (path.string().find("/tests/") != std::string::npos || path == table) continue;
      ++scanned;
      const auto found = spellings_outside_the_table(read_file(path));
      EXPECT_TRUE(found.empty()) << path.string() << " spells " << ::testing::PrintToString(found);
    }
  }
  EXPECT_GT(scanned, 200u);
}

}  // namespace
}  // namespace distmetrics::runtime
