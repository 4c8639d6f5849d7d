// Child processes of the supervisor: spawning by exec (posix_spawn, safe in a threaded process),
// ending by pid (TERM, then KILL), reaping, and saying how a process died.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "distmetrics/runtime/deadline.h"

namespace distmetrics::runtime::detail {

// "SIGABRT", "SIGSEGV", ...; nullptr for others. Async-signal-safe (a static table).
const char* signal_name(int signal);
// "killed by signal 6 (SIGABRT)" or "exit status 1", from a waitpid status.
std::string describe_wait_status(int status);

struct SpawnSpec {
  std::vector<std::string> argv;                  // argv[0] is the program (a path)
  std::map<std::string, std::string> extra_env;   // added to (or replacing in) this environment
  int output_fd = -1;                             // stdout and stderr of the child; -1: inherit
  bool own_process_group = false;                 // the child leads a new process group (pgid = its pid)
};

// Starts the program; throws ConfigError with the reason when it cannot.
pid_t spawn_process(const SpawnSpec& spec);

// spawn_process, the child in a network namespace of its own whose one interface is loopback
// (up): whatever it and its children listen on, on any address, only they can reach. Root gets
// one directly, another user through a user namespace that maps it to itself. Where the system
// allows neither (a container without CAP_SYS_ADMIN, user namespaces disabled), the child runs
// in this process's network namespace and `refused` says why; else `refused` is empty.
pid_t spawn_process_on_own_loopback(const SpawnSpec& spec, std::string& refused);

// A process's state as far as this process can tell: running, a zombie, or gone.
enum class ProcessState { Running, Zombie, Gone };
ProcessState process_state(pid_t pid);
// Whether the process is stopped (SIGSTOP, or stopped by a tracer): it acts on no signal but
// SIGKILL and SIGCONT until it is continued.
bool process_is_stopped(pid_t pid);

// waitpid(pid) without blocking past the deadline. Returns the status once the child is reaped,
// nullopt when it is still running at the deadline or is not our child (then it was not reaped).
std::optional<int> reap_child(pid_t pid, const Deadline& deadline);

// The parent of a process (from /proc), 0 when it is gone.
pid_t parent_of(pid_t pid);
// Whether `pid` is `ancestor` or one of its descendants, now.
bool descends_from(pid_t pid, pid_t ancestor);
// The process group of `pid` (from /proc), 0 when it is gone.
pid_t process_group_of(pid_t pid);
// Whether some process of group `pgid` descends from `ancestor` (a scan of /proc).
bool group_has_descendant_of(pid_t pgid, pid_t ancestor);

// Ends whole process groups that this process created (each leader's pid is its pgid): SIGTERM
// to each group, up to `grace`, then SIGKILL; reaps the leaders and whatever of the groups became
// our children (we are a subreaper). Leaders' wait statuses are recorded in `statuses` when given.
void end_process_groups(const std::vector<pid_t>& leaders, std::chrono::milliseconds grace,
                        std::map<pid_t, int>* statuses = nullptr);

// end_process_groups without the wait: the groups are signalled now (SIGTERM, SIGCONT for one
// stopped) and reaped by poll(), which SIGKILLs what is left once `grace` has passed. What a
// process that imported torch takes to exit (the kernel's teardown, tens of milliseconds) then
// overlaps what its supervisor does next.
class EndingGroups {
 public:
  void add(const std::vector<pid_t>& leaders, std::chrono::milliseconds grace);
  // Reaps what has ended, escalates past the grace; true when every group is gone. Waits (at most
  // the grace and 5 s more) for the groups added before `wait_for_added_before`, if given.
  bool poll(std::optional<std::chrono::steady_clock::time_point> wait_for_added_before = std::nullopt);
  bool empty() const { return groups_.empty(); }

 private:
  struct Group {
    pid_t leader;
    std::chrono::steady_clock::time_point added, kill_at;
    bool killed = false;
  };
  std::vector<Group> groups_;
};

// Ends the processes: SIGTERM to each, up to `grace` for them to go, then SIGKILL to the rest.
// Reaps those that are (or become) our children. Returns the pids still running afterwards
// (empty unless a process ignores SIGKILL, e.g. stuck in the kernel).
std::vector<pid_t> end_processes(const std::vector<pid_t>& pids, std::chrono::milliseconds grace);

// What one rank wrote, from the output of `mpirun --tag-output`, which prefixes every chunk a
// rank writes with "[job,rank]<stdout>:" (or <stderr>), chunks of several ranks sharing lines.
// Untagged lines are mpirun's own; with `with_launcher_lines` they follow, as "mpirun: ...".
std::string mpirun_rank_output(const std::string& tagged, int rank, bool with_launcher_lines);

// The path of this executable (/proc/self/exe resolved).
std::string current_executable();

// Writes all of `text` to `fd` (a pipe to a parent: a child's one-line answer), retrying
// interrupted writes; stops quietly when the reader is gone.
void write_all(int fd, const std::string& text);

// A file in memory (memfd) that children can write their output to: it never blocks them, it
// leaves nothing on disk, and its tail can be read at any time. O_APPEND, so truncating it
// between jobs keeps the children's writes at the start.
class OutputCapture {
 public:
  explicit OutputCapture(const std::string& name);
  ~OutputCapture();
  OutputCapture(const OutputCapture&) = delete;
  OutputCapture& operator=(const OutputCapture&) = delete;

  int fd() const { return fd_; }
  void clear();
  // The last `max_bytes` of what was written, starting at a line boundary.
  std::string tail(size_t max_bytes = 4096) const;

 private:
  int fd_ = -1;
};

}  // namespace distmetrics::runtime::detail
