// gloo_loop_priority.h says what is done to the transport's loop thread, and why.
#include "gloo_loop_priority.h"

#include <sched.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "distmetrics/runtime/errors.h"
#include "gloo_loop_shim.h"

namespace distmetrics::runtime::detail {
namespace {

constexpr const char* kLoopVariable = "DISTMETRICS_GLOO_LOOP";

std::string thread_name(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

}  // namespace

LoopPriority loop_priority_from_environment() {
  const char* value = std::getenv(kLoopVariable);
  const std::string choice = value == nullptr ? "auto" : value;
  if (choice == "idle") return LoopPriority::Idle;
  if (choice == "auto" || choice == "normal" || choice.empty()) return LoopPriority::Normal;
  throw ConfigError(std::string(kLoopVariable) + "='" + choice +
                    "': the gloo transport loop is auto (sleeps through a spin), normal (gloo as shipped) or idle "
                    "(auto at SCHED_IDLE); unset: auto");
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

namespace {
std::mutex adopted_mutex;
std::set<pid_t> adopted;  // a forked child inherits its parent's: transport_loop_threads filters
}  // namespace

std::set<pid_t> transport_loop_threads() {
  const std::set<pid_t> running = process_threads();
  std::lock_guard<std::mutex> lock(adopted_mutex);
  std::set<pid_t> loops;
  for (pid_t tid : adopted) {
    if (running.count(tid)) loops.insert(tid);
  }
  return loops;
}

int adopt_new_loop_threads(const std::set<pid_t>& before, LoopPriority priority) {
  std::vector<pid_t> fresh;
  for (pid_t tid : process_threads()) {
    if (!before.count(tid)) fresh.push_back(tid);
  }
  if (fresh.empty()) return 0;
  // Making a Device starts one thread, its loop: that one, named or not (Debian's 2022 gloo does
  // not name it). Only where another thread of this process started meanwhile is the name asked,
  // which the wheel's gloo sets from the thread itself just after it starts: a moment for it.
  std::vector<pid_t> loops;
  if (fresh.size() == 1) loops = fresh;
  for (int attempt = 0; attempt < 20 && loops.empty(); ++attempt) {
    for (pid_t tid : fresh) {
      if (thread_name(tid) == kGlooLoopThreadName) loops.push_back(tid);
    }
    if (loops.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  {
    std::lock_guard<std::mutex> lock(adopted_mutex);
    adopted.insert(loops.begin(), loops.end());
  }
  for (pid_t tid : loops) {
    // gloo_loop_shim.cpp knows the loop by its name.
    if (thread_name(tid) != kGlooLoopThreadName) {
      std::ofstream("/proc/self/task/" + std::to_string(tid) + "/comm") << kGlooLoopThreadName;
    }
    if (priority != LoopPriority::Idle) continue;
    sched_param param{};
    param.sched_priority = 0;
    (void)::sched_setscheduler(tid, SCHED_IDLE, &param);  // lowering needs no privilege
  }
  return static_cast<int>(loops.size());
}

}  // namespace distmetrics::runtime::detail
