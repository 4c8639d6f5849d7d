#include "common.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace distmetrics::bench {
namespace {


std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value ? value : fallback;
}

std::map<int, std::unique_ptr<runtime::RankPool>>& pools() {
  static std::map<int, std::unique_ptr<runtime::RankPool>> all;
  return all;
}

}  // namespace

bool quick() {
  // Read on first use: benchmarks register (and size themselves) during static initialisation.
  static const bool on = [] {
    const char* env = std::getenv("DISTMETRICS_BENCH_QUICK");
    return env != nullptr && std::string(env) == "1";
  }();
  return on;
}

std::string self_path() { return std::filesystem::read_symlink("/proc/self/exe").string(); }
std::string cli_path() { return env_or("DISTMETRICS_BENCH_CLI", DISTMETRICS_BENCH_CLI); }
std::string scenarios_dir() { return env_or("DISTMETRICS_BENCH_SCENARIOS", DISTMETRICS_BENCH_SCENARIOS); }
std::string python_path() { return env_or("DISTMETRICS_BENCH_PYTHON", DISTMETRICS_BENCH_PYTHON); }

std::string make_temp_dir(const std::string& tag) {
  const std::string base = env_or("TMPDIR", "/tmp");
  std::string pattern = base + "/distmetrics-bench-" + tag + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a folder under " + base);
  return pattern;
}

void remove_tree(const std::string& path) {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

pid_t spawn(const std::vector<std::string>& argv, bool keep_output) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!keep_output) {
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  return pid;
}

void wait_all(const std::vector<pid_t>& pids, std::chrono::seconds deadline, const std::string& what) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  std::string failure;
  std::vector<pid_t> left = pids;
  while (!left.empty()) {
    for (auto it = left.begin(); it != left.end();) {
      int status = 0;
      const pid_t done = ::waitpid(*it, &status, WNOHANG);
      if (done == *it) {
        if (failure.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
          failure = what + ": process " + std::to_string(*it) + " ended with status " + std::to_string(status);
        }
        it = left.erase(it);
      } else {
        ++it;
      }
    }
    if (left.empty()) break;
    if (std::chrono::steady_clock::now() > until) {
      for (pid_t pid : left) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
      throw std::runtime_error(what + ": still running after " + std::to_string(deadline.count()) + " s (killed)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (!failure.empty()) throw std::runtime_error(failure);
}

runtime::RankPool& pool(int world_size) {
  auto& slot = pools()[world_size];
  if (!slot) {
    runtime::PoolOptions options;
    options.world_size = world_size;
    slot = std::make_unique<runtime::RankPool>(options);
  }
  return *slot;
}

void shutdown_pools() { pools().clear(); }

nlohmann::json run_task(int world_size, const std::string& task, const nlohmann::json& params,
                        std::chrono::milliseconds deadline) {
  runtime::Job request;
  request.id = "bench/" + task + "/ws" + std::to_string(world_size);
  request.task = task;
  request.params = params;
  request.deadline = deadline;
  const runtime::JobResult run = pool(world_size).run(request);
  if (run.status != runtime::RunStatus::Completed) {
    throw std::runtime_error("task " + task + " at world size " + std::to_string(world_size) + ": " +
                             runtime::to_string(run.status) + ": " + run.diagnosis + " " +
                             (run.ranks.empty() ? "" : run.ranks[0].error));
  }
  return run.ranks.at(0).result;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

std::string trivial_scenario_toml(int world_size, int seed) {
  std::ostringstream out;
  out << "description = \"Trivial: one update and one compute of MAE on 8 samples (benchmark).\"\n"
      << "script = [\"update\", \"compute\"]\n"
      << "properties = [\"equal_to_single\", \"ranks_agree\"]\n"
      << "[metric]\nname = \"MeanAbsoluteError\"\n"
      << "[data]\ngenerator = \"regression\"\nseed = " << seed << "\nnum_samples = 8\nbatch_size = 4\n"
      << "[variants]\nworld_sizes = [" << world_size << "]\nbackends = [\"gloo\"]\nshards = [\"even\"]\n"
      << "placements = [\"cpu\"]\n";
  return out.str();
}

}  // namespace distmetrics::bench
