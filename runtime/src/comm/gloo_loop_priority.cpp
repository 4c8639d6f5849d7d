// gloo_loop_priority.h says why the transport's loop thread runs at SCHED_IDLE.
#include "gloo_loop_priority.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime::detail {
namespace {

constexpr const char* kLoopVariable = "DISTMETRICS_GLOO_LOOP";
constexpr const char* kLoopThreadName = "gloo_tcp_loop";

int cores_available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
}

std::string thread_name(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

}  // namespace

LoopPriority loop_priority_for(int world_size, bool ranks_on_this_host) {
  const char* value = std::getenv(kLoopVariable);
  const std::string choice = value == nullptr ? "auto" : value;
  if (choice == "idle") return LoopPriority::Idle;
  if (choice == "normal") return LoopPriority::Normal;
  if (choice != "auto" && !choice.empty()) {
    throw ConfigError(std::string(kLoopVariable) + "='" + choice +
                      "': the gloo transport loop's scheduling is idle, normal or auto (unset: auto)");
  }
  return ranks_on_this_host && world_size > 1 && world_size >= cores_available() ? LoopPriority::Idle
                                                                                  : LoopPriority::Normal;
}

std::set<pid_t> process_threads() {
  std::set<pid_t> tids;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", error)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) tids.insert(std::stoi(name));
  }
  return tids;
}

int idle_new_loop_threads(const std::set<pid_t>& before) {
  std::vector<pid_t> fresh;
  for (pid_t tid : process_threads()) {
    if (!before.count(tid)) fresh.push_back(tid);
  }
  if (fresh.empty()) return 0;
  // gloo names its loop thread from the thread itself, just after it starts: give it a moment.
  std::vector<pid_t> loops;
  for (int attempt = 0; attempt < 20 && loops.empty(); ++attempt) {
    for (pid_t tid : fresh) {
      if (thread_name(tid) == kLoopThreadName) loops.push_back(tid);
    }
    if (loops.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (loops.empty() && fresh.size() == 1) loops = fresh;  // a gloo that does not name it
  int set = 0;
  for (pid_t tid : loops) {
    sched_param param{};
    param.sched_priority = 0;
    if (::sched_setscheduler(tid, SCHED_IDLE, &param) == 0) ++set;  // lowering needs no privilege
  }
  return set;
}

}  // namespace distmetrics::runtime::detail
