// Processes' states, reaping, and ending whole process groups (process.h): what the rank pool
// and the peer runner use to end the ranks they started.
#include "process.h"

#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "distmetrics/runtime/errors.h"



namespace distmetrics::runtime::detail {

namespace {
// The state letter of /proc/PID/stat ('R', 'S', 'T', 'Z', ...); 0 when it cannot be read.
char state_letter(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!stat || !std::getline(stat, text)) return 0;
  const auto close = text.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos || close + 2 >= text.size()) return 0;
  return text[close + 2];
}
}  // namespace

ProcessState process_state(pid_t pid) {
  const char state = state_letter(pid);
  if (state == 0) return ProcessState::Gone;
  if (state == 'Z') return ProcessState::Zombie;
  if (state == 'X' || state == 'x') return ProcessState::Gone;
  return ProcessState::Running;
}

bool process_is_stopped(pid_t pid) {
  const char state = state_letter(pid);
  return state == 'T' || state == 't';
}

std::optional<int> reap_child(pid_t pid, const Deadline& deadline) {
  auto pause = std::chrono::microseconds(200);
  while (true) {
    int status = 0;
    const pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    if (got < 0 && errno != EINTR) return std::nullopt;  // not our child
    if (deadline.expired()) return std::nullopt;
    std::this_thread::sleep_for(std::min<std::chrono::microseconds>(pause, deadline.remaining()));
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(20));
  }
}

namespace {
// Fields 4 (parent) and 5 (process group) of /proc/PID/stat; zeros when the process is gone.
std::pair<pid_t, pid_t> parent_and_group(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!stat || !std::getline(stat, text)) return {0, 0};
  const auto close = text.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos || close + 2 >= text.size()) return {0, 0};
  std::istringstream rest(text.substr(close + 2));
  char state = 0;
  long parent = 0, group = 0;
  rest >> state >> parent >> group;
  return {static_cast<pid_t>(parent), static_cast<pid_t>(group)};
}
}  // namespace

pid_t parent_of(pid_t pid) { return parent_and_group(pid).first; }

pid_t process_group_of(pid_t pid) { return parent_and_group(pid).second; }

bool group_has_descendant_of(pid_t pgid, pid_t ancestor) {
  DIR* proc = ::opendir("/proc");
  if (!proc) return false;
  bool found = false;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (process_group_of(static_cast<pid_t>(pid)) == pgid && descends_from(static_cast<pid_t>(pid), ancestor)) {
      found = true;
      break;
    }
  }
  ::closedir(proc);
  return found;
}

bool descends_from(pid_t pid, pid_t ancestor) {
  for (int depth = 0; pid > 1 && depth < 64; ++depth) {
    if (pid == ancestor) return true;
    pid = parent_of(pid);
  }
  return pid == ancestor && ancestor > 0;
}

void end_process_groups(const std::vector<pid_t>& leaders, std::chrono::milliseconds grace,
                        std::map<pid_t, int>* statuses) {
  auto reap_group = [&](pid_t group) {
    while (true) {
      int status = 0;
      const pid_t got = waitpid(-group, &status, WNOHANG);
      if (got <= 0) break;
      if (statuses && got == group) (*statuses)[group] = status;
    }
  };
  auto group_gone = [&](pid_t group) {
    reap_group(group);
    if (::kill(-group, 0) != 0 && errno == ESRCH) return true;
    // Only zombies that are not ours (their parent will reap them) may be left.
    return false;
  };
  auto wait_groups = [&](std::vector<pid_t> groups, const Deadline& deadline) {
    auto pause = std::chrono::microseconds(200);
    while (true) {
      groups.erase(std::remove_if(groups.begin(), groups.end(), group_gone), groups.end());
      if (groups.empty() || deadline.expired()) return groups;
      std::this_thread::sleep_for(std::min<std::chrono::microseconds>(pause, deadline.remaining()));
      pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(20));
    }
  };
  std::vector<pid_t> live;
  for (pid_t leader : leaders) {
    if (leader > 0 && ::kill(-leader, SIGTERM) == 0) live.push_back(leader);
    else if (leader > 0) reap_group(leader);
  }
  // A stopped process never acts on SIGTERM: let it go on, so that it can.
  for (pid_t leader : live) ::kill(-leader, SIGCONT);
  live = wait_groups(live, Deadline::after(grace));
  for (pid_t leader : live) ::kill(-leader, SIGKILL);
  wait_groups(live, Deadline::after(std::chrono::seconds(5)));
}

void EndingGroups::add(const std::vector<pid_t>& leaders, std::chrono::milliseconds grace) {
  const auto now = std::chrono::steady_clock::now();
  for (pid_t leader : leaders) {
    if (leader <= 0) continue;
    ::kill(-leader, SIGTERM);
    ::kill(-leader, SIGCONT);  // a stopped process never acts on SIGTERM: let it go on, so that it can
    groups_.push_back({leader, now, now + grace});
  }
}

bool EndingGroups::poll(std::optional<std::chrono::steady_clock::time_point> wait_for_added_before) {
  auto give_up = std::chrono::steady_clock::now();
  for (const auto& group : groups_) give_up = std::max(give_up, group.kill_at);
  give_up += std::chrono::seconds(5);  // after SIGKILL: a process stuck in the kernel is left
  auto pause = std::chrono::microseconds(200);
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    bool waited_for_left = false;
    for (auto it = groups_.begin(); it != groups_.end();) {
      int status = 0;
      while (::waitpid(-it->leader, &status, WNOHANG) > 0) {
      }
      if (::kill(-it->leader, 0) != 0 && errno == ESRCH) {
        it = groups_.erase(it);
        continue;
      }
      // A group's number is not reused while any process of it is left (kill found one).
      if (!it->killed && now >= it->kill_at) {
        ::kill(-it->leader, SIGKILL);
        it->killed = true;
      }
      waited_for_left = waited_for_left || (wait_for_added_before && it->added < *wait_for_added_before);
      ++it;
    }
    if (!waited_for_left || now >= give_up) return groups_.empty();
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(5));
  }
}

namespace {

// Reaps what it can and says whether the process still runs (a zombie that is not ours counts
// as ended: only its parent can reap it).
bool still_running(pid_t pid) {
  int status = 0;
  const pid_t got = waitpid(pid, &status, WNOHANG);
  if (got == pid) return false;
  return process_state(pid) == ProcessState::Running;
}

std::vector<pid_t> wait_until_ended(std::vector<pid_t> pids, const Deadline& deadline) {
  auto pause = std::chrono::microseconds(200);
  while (true) {
    pids.erase(std::remove_if(pids.begin(), pids.end(), [](pid_t p) { return !still_running(p); }), pids.end());
    if (pids.empty() || deadline.expired()) return pids;
    std::this_thread::sleep_for(std::min<std::chrono::microseconds>(pause, deadline.remaining()));
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(20));
  }
}

}  // namespace

std::vector<pid_t> end_processes(const std::vector<pid_t>& pids, std::chrono::milliseconds grace) {
  std::vector<pid_t> live;
  for (pid_t pid : pids) {
    if (pid > 0 && kill(pid, SIGTERM) == 0) live.push_back(pid);
    else if (pid > 0) waitpid(pid, nullptr, WNOHANG);  // already gone: reap a zombie child
  }
  live = wait_until_ended(live, Deadline::after(grace));
  for (pid_t pid : live) kill(pid, SIGKILL);
  return wait_until_ended(live, Deadline::after(std::chrono::seconds(5)));
}

}  // namespace distmetrics::runtime::detail
