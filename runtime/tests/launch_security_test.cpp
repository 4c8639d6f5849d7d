// The rank pool keeps strangers out and leaves nothing behind (issue 12): nothing listens on the
// network (mpirun of the mpi pool only where no other host can reach it), nothing secret is on a command line, a process it did not start cannot join, stall
// the store or get a pid signalled; a rank that forks then crashes, or stops itself, is reported
// before its deadline (plus the one second the report may take) and leaves no process behind.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "distmetrics/runtime/backends.h"
#include "distmetrics/runtime/rank_pool.h"
#include "local_pool_kinds.h"
#include "distmetrics/runtime/task.h"
#include "../src/launch/zygote.h"

extern char** environ;

namespace distmetrics::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// --- What a process listens on ---------------------------------------------------------------------

std::set<std::string> socket_inodes(const std::string& pid) {
  std::set<std::string> inodes;
  const std::string dir = "/proc/" + pid + "/fd";
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      char target[256];
      const ssize_t n = ::readlink((dir + "/" + e->d_name).c_str(), target, sizeof(target) - 1);
      if (n <= 0) continue;
      const std::string link(target, static_cast<size_t>(n));
      if (link.rfind("socket:[", 0) == 0) inodes.insert(link.substr(8, link.size() - 9));
    }
    ::closedir(d);
  }
  return inodes;
}

// "127.0.0.1" from the hex of /proc/net/tcp (little-endian IPv4); IPv6 addresses as their hex.
std::string address_of(const std::string& hex) {
  if (hex.size() != 8) return hex == "00000000000000000000000001000000" ? "::1" : "ipv6:" + hex;
  const unsigned long v = std::stoul(hex, nullptr, 16);
  return std::to_string(v & 255) + "." + std::to_string((v >> 8) & 255) + "." + std::to_string((v >> 16) & 255) + "." +
         std::to_string(v >> 24);
}

// The local addresses of the process's TCP sockets; only those it listens on with `listening`.
std::vector<std::string> tcp_addresses(const std::string& pid, bool listening) {
  const auto inodes = socket_inodes(pid);
  std::vector<std::string> addresses;
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    std::ifstream in("/proc/" + pid + table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
      if (inodes.count(inode) == 0 || (listening && state != "0A")) continue;  // 0A: LISTEN
      addresses.push_back(address_of(local.substr(0, local.find(':'))));
    }
  }
  return addresses;
}

// While its communicator is alive: the local addresses of this rank's TCP sockets (Gloo's
// connections to its peers among them).
DISTMETRICS_TASK(security_tcp_addresses) {
  ctx.comm.barrier();
  nlohmann::json addresses = tcp_addresses("self", false);
  ctx.comm.barrier();
  return {{"tcp", addresses}};
}

DISTMETRICS_TASK(security_sum_of_ranks) {
  at::Tensor sum = ctx.comm.all_reduce_copy(at::full({1}, double(ctx.rank), at::kDouble), ReduceOp::Sum);
  return {{"sum", sum.item<double>()}};
}

DISTMETRICS_TASK(security_skip_collective) {
  ctx.comm.barrier();
  if (ctx.rank != ctx.params.value("skipper", -1)) ctx.comm.barrier();
  return nlohmann::json::object();
}

// The victim forks a child that lives on (holding the victim's sockets), then crashes.
DISTMETRICS_TASK(security_fork_then_crash) {
  ctx.comm.barrier();
  if (ctx.rank == ctx.params.value("victim", -1)) {
    const pid_t child = ::fork();
    if (child == 0) {
      for (;;) ::pause();  // only async-signal-safe calls in the child of a threaded process
    }
    std::cerr << "forked child " << child << std::endl;
    std::abort();
  }
  ctx.comm.barrier();
  return nlohmann::json::object();
}

// The victim stops itself (SIGSTOP) before the second collective.
DISTMETRICS_TASK(security_stop_self) {
  ctx.comm.barrier();
  if (ctx.rank == ctx.params.value("victim", -1)) ::raise(SIGSTOP);
  ctx.comm.barrier();
  return nlohmann::json::object();
}

// The victim asks for far more memory than its limit.
DISTMETRICS_TASK(security_allocate_too_much) {
  ctx.comm.barrier();
  if (ctx.rank == ctx.params.value("victim", -1)) {
    at::Tensor huge = at::empty({std::int64_t{16} << 30}, at::kByte);  // 16 GiB
    huge.fill_(1);
  }
  return {{"vm_peak_kib", 0}};
}

bool process_is_gone(long pid) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z' &&
         ::waitpid(static_cast<pid_t>(pid), nullptr, WNOHANG) == 0;  // a zombie that is not ours
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

pid_t spawn(const std::vector<std::string>& argv, int output_fd = -1) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (output_fd >= 0) posix_spawn_file_actions_adddup2(&actions, output_fd, 1);
  std::vector<std::string> args = argv;
  std::vector<char*> raw;
  for (auto& a : args) raw.push_back(a.data());
  raw.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, raw[0], &actions, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(rc, 0) << "cannot start " << argv[0];
  return pid;
}

// Kills and reaps a helper process when the test ends, however it ends.
struct Helper {
  pid_t pid = 0;
  ~Helper() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

std::vector<long> child_pids_of(pid_t parent) {
  std::vector<long> children;
  std::ifstream in("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children");
  long pid = 0;
  while (in >> pid) children.push_back(pid);
  return children;
}

Job job(const std::string& backend, const std::string& task, nlohmann::json params = nlohmann::json::object(),
        std::chrono::milliseconds deadline = 4s) {
  Job r;
  r.id = "security/" + task;
  r.task = task;
  r.params = std::move(params);
  r.backend = backend;
  r.deadline = deadline;
  return r;
}

void expect_sum(RankPool& pool, const std::string& backend, int world_size) {
  const JobResult run = pool.run(job(backend, "security_sum_of_ranks"));
  ASSERT_EQ(run.status, RunStatus::Completed) << run.diagnosis;
  for (const auto& rank : run.ranks) EXPECT_EQ(rank.result["sum"].get<double>(), world_size * (world_size - 1) / 2.0);
}

// --- A stranger -----------------------------------------------------------------------------------

TEST(RankPoolSecurity, AStrangerCannotJoinStallTheStoreOrGetAPidSignalled) {
  // An unrelated process whose pid the stranger claims as its own.
  Helper decoy_process{spawn({"/bin/sleep", "30"})};
  const pid_t decoy = decoy_process.pid;
  char out_path[] = "/tmp/distmetrics-impostor-XXXXXX";
  const int out_fd = ::mkstemp(out_path);
  ASSERT_GE(out_fd, 0);
  Helper impostor_process{spawn({DISTMETRICS_TEST_PYTHON, DISTMETRICS_IMPOSTOR_SCRIPT, std::to_string(::getpid()), std::to_string(decoy), "6"},
                               out_fd)};
  const pid_t impostor = impostor_process.pid;

  PoolOptions options;
  options.world_size = 2;
  options.term_grace = 500ms;
  // Each worker waits a second before it connects, so that the stranger (which watches /proc for
  // a worker's command line) surely comes while the pool is still starting.
  options.worker_command = {"/bin/sh", "-c", "sleep 1; exec \"$0\" \"$@\"", "/proc/self/exe"};
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  ASSERT_GT(n, 0);
  options.worker_command[3] = std::string(self, static_cast<size_t>(n));
  RankPool pool(options);

  const JobResult first = pool.run(job("gloo", "security_sum_of_ranks"));
  ASSERT_EQ(first.status, RunStatus::Completed) << first.diagnosis;
  for (const auto& rank : first.ranks) {
    EXPECT_EQ(rank.result["sum"].get<double>(), 1.0);
    EXPECT_EQ(rank.pid, pool.worker_pids()[static_cast<size_t>(rank.rank)]);
    EXPECT_NE(rank.pid, static_cast<long>(decoy));
  }
  EXPECT_GE(pool.rejected_connections(), 2);  // its control hello and its store hello
  const std::string dir = pool.private_dir();
  EXPECT_FALSE(path_exists(dir + "/pool.sock")) << "the socket must be gone once every rank is in";
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  // A hang ends the pool: only the pool's own processes are signalled.
  const JobResult hang = pool.run(job("gloo", "security_skip_collective", {{"skipper", 1}}, 2s));
  EXPECT_EQ(hang.status, RunStatus::Hang);
  EXPECT_EQ(hang.blamed_rank, 1) << hang.diagnosis;
  expect_sum(pool, "gloo", 2);

  int status = 0;
  ASSERT_EQ(::waitpid(impostor, &status, 0), impostor);
  impostor_process.pid = 0;
  EXPECT_EQ(::waitpid(decoy, &status, WNOHANG), 0) << "the decoy the stranger named was signalled";

  std::ifstream out(out_path);
  std::string text((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  ::close(out_fd);
  ::unlink(out_path);
  const auto report = nlohmann::json::parse(text);
  ASSERT_TRUE(report.value("found", false)) << text;
  for (const auto& arg : report.at("cmdline")) {
    EXPECT_EQ(arg.get<std::string>().find("token"), std::string::npos) << "a secret on the command line: " << arg;
  }
  // Rejected: the connection closed without an answer.
  EXPECT_EQ(report.at("control"), "closed") << text;
  EXPECT_EQ(report.at("store"), "closed") << text;
}

TEST(RankPoolSecurity, NothingListensOnTheNetworkAndGlooStaysOnLoopback) {
  // (A supervisor in a process with TCP sockets of its own would make this check meaningless.)
  PoolOptions options;
  options.world_size = 2;
  std::string dir;
  {
    RankPool pool(options);
    const JobResult run = pool.run(job("gloo", "security_tcp_addresses"));
    ASSERT_EQ(run.status, RunStatus::Completed) << run.diagnosis;
    for (const auto& rank : run.ranks) {
      ASSERT_FALSE(rank.result["tcp"].empty()) << "Gloo connects the ranks over TCP";
      for (const auto& address : rank.result["tcp"]) EXPECT_EQ(address, "127.0.0.1") << "rank " << rank.rank;
    }
    EXPECT_TRUE(tcp_addresses("self", false).empty()) << "the supervisor has a TCP socket";
    // A worker listens on loopback at most: the gloo of LibTorch 2.x keeps one listening socket
    // per device for a group's life (1.13's pairs listen only while they connect), and a
    // worker's group may still be closing when the job's result is in (it is released after).
    for (long pid : pool.worker_pids())
      for (const auto& address : tcp_addresses(std::to_string(pid), true))
        EXPECT_EQ(address, "127.0.0.1") << "worker " << pid << " listens on " << address;
    dir = pool.private_dir();
    ASSERT_TRUE(path_exists(dir));
  }
  EXPECT_FALSE(path_exists(dir)) << "the pool's folder is left: " << dir;
}

// The network namespace a process is in ("net:[4026531840]").
std::string network_namespace_of(const std::string& pid) {
  char target[128];
  const ssize_t n = ::readlink(("/proc/" + pid + "/ns/net").c_str(), target, sizeof(target) - 1);
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : "";
}

// The interfaces of the network namespace a process is in (/proc/<pid>/net/dev).
std::vector<std::string> interfaces_of(const std::string& pid) {
  std::ifstream dev("/proc/" + pid + "/net/dev");
  std::vector<std::string> names;
  std::string line;
  for (int header = 0; header < 2 && std::getline(dev, line); ++header) {
  }
  while (std::getline(dev, line)) {
    const auto colon = line.find(':');
    std::istringstream name(line.substr(0, colon));
    std::string word;
    name >> word;
    names.push_back(word);
  }
  return names;
}

bool is_loopback(const std::string& address) { return address.rfind("127.", 0) == 0 || address == "::1"; }

// Whether this system lets a child of ours have a network namespace of its own (as root, or
// through a user namespace).
bool network_namespaces_allowed() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(::unshare(CLONE_NEWNET) == 0 || ::unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 ? 0 : 1);
  int status = 0;
  return child > 0 && ::waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

long parent_pid_of(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  std::istringstream after(text.substr(text.rfind(')') + 2));
  std::string state;
  long parent = 0;
  after >> state >> parent;
  return parent;
}

TEST(RankPoolSecurity, MpirunOfTheMpiPoolListensOnLoopbackOnly) {
  const auto kinds = testing_support::local_pool_kinds();
  const auto mpi = std::find_if(kinds.begin(), kinds.end(), [](const auto& k) { return k.launch == "mpirun"; });
  if (mpi == kinds.end()) GTEST_SKIP() << "no backend of this build starts its pool with mpirun";
  PoolOptions options;
  options.world_size = 2;
  options.launch = mpi->launch;
  RankPool pool(options);
  expect_sum(pool, mpi->backend, 2);
  const long mpirun = parent_pid_of(pool.worker_pids().at(0));
  ASSERT_GT(mpirun, 1);
  std::ifstream comm("/proc/" + std::to_string(mpirun) + "/comm");
  std::string name;
  comm >> name;
  ASSERT_TRUE(name == "mpirun" || name == "mpiexec" || name == "orterun") << "the ranks' parent is " << name;
  const std::string pid = std::to_string(mpirun);
  // mpirun listens (its out-of-band channel binds 0.0.0.0 and [::], PMIx's 127.0.0.1) ...
  const auto listening = tcp_addresses(pid, true);
  EXPECT_FALSE(listening.empty()) << "mpirun listens on nothing: this test looks at the wrong process";
  // ... where no other host can reach it: in a network namespace whose only interface is
  // loopback, or (the user chose Open MPI's interfaces) on loopback addresses.
  if (network_namespace_of(pid) == network_namespace_of("self")) {
    if (!network_namespaces_allowed()) GTEST_SKIP() << "this system allows no network namespace (unshare(CLONE_NEWNET) and "
                                                       "CLONE_NEWUSER | CLONE_NEWNET both refused): mpirun listens on "
                                                    << testing::PrintToString(listening);
    for (const auto& address : listening) EXPECT_TRUE(is_loopback(address)) << "mpirun listens on " << address;
  } else {
    EXPECT_EQ(interfaces_of(pid), std::vector<std::string>{"lo"}) << "mpirun's network namespace";
    for (long rank : pool.worker_pids()) EXPECT_EQ(network_namespace_of(std::to_string(rank)), network_namespace_of(pid));
  }
  for (long rank : pool.worker_pids()) EXPECT_TRUE(tcp_addresses(std::to_string(rank), true).empty()) << "rank " << rank;
  expect_sum(pool, mpi->backend, 2);  // the ranks still reach the supervisor (its Unix socket)
}

TEST(RankPoolSecurity, ARankPastItsMemoryLimitIsReportedAsSuchAndThePoolGoesOn) {
  PoolOptions options;
  options.world_size = 2;
  options.rank_memory_bytes = std::uint64_t{6} << 30;
  RankPool pool(options);
  const JobResult run = pool.run(job("gloo", "security_allocate_too_much", {{"victim", 1}}));
  ASSERT_EQ(run.status, RunStatus::Error) << run.diagnosis;
  EXPECT_EQ(run.ranks.at(0).state, RankState::Finished);
  EXPECT_EQ(run.ranks.at(1).state, RankState::Raised);
  EXPECT_EQ(run.ranks.at(1).error_type, "RankMemoryExceeded") << run.ranks.at(1).error;
  EXPECT_NE(run.ranks.at(1).error.find("rank 1 went past its memory limit of 6.0 GiB"), std::string::npos)
      << run.ranks.at(1).error;
  expect_sum(pool, "gloo", 2);
}

// --- Faults that leave something behind ------------------------------------------------------------

using testing_support::PoolKind;

class RankPoolHygiene : public testing::TestWithParam<PoolKind> {
 protected:
  RankPool make_pool(int world_size) {
    PoolOptions options;
    options.world_size = world_size;
    options.launch = GetParam().launch;
    options.term_grace = 500ms;
    return RankPool(options);
  }

  // The verdict came within the deadline plus one second (the settling and ending it may take):
  // a bound the supervisor promises, not a speed.
  static void expect_verdict_by(Clock::time_point started, std::chrono::milliseconds deadline) {
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    EXPECT_LE(took, deadline + 1s) << "the verdict took " << took.count() << " ms";
  }

  // No process of the pool is left: no child of ours (what a rank forked is re-parented to us)
  // but the worker zygote, which the test main started and which outlives every pool.
  static void expect_no_child_left() {
    auto children = child_pids_of(::getpid());
    children.erase(std::remove(children.begin(), children.end(), static_cast<long>(detail::worker_zygote_pid())), children.end());
    for (pid_t spare : detail::worker_zygote_spare_pids())  // forked ahead by the zygote, which outlives the pool
      children.erase(std::remove(children.begin(), children.end(), static_cast<long>(spare)), children.end());
    EXPECT_TRUE(children.empty()) << "a child process is left";
  }
};

TEST_P(RankPoolHygiene, ARankThatForksThenCrashesIsACrashOfThatRankAndLeavesNothing) {
  std::string dir;
  {
    RankPool pool = make_pool(2);
    expect_sum(pool, GetParam().backend, 2);
    dir = pool.private_dir();
    if (GetParam().launch == "mpirun") {
      // Open MPI's shared-memory files are in the pool's folder (removed with it), not /dev/shm.
      bool segments = false;
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        segments = segments || entry.path().filename().string().rfind("vader_segment.", 0) == 0;
      }
      EXPECT_TRUE(segments) << "no Open MPI shared-memory file in " << dir;
    }
    const auto started = Clock::now();
    const JobResult run = pool.run(job(GetParam().backend, "security_fork_then_crash", {{"victim", 1}}, 4s));
    expect_verdict_by(started, 4s);
    EXPECT_EQ(run.status, RunStatus::Crash) << run.diagnosis;
    EXPECT_EQ(run.blamed_rank, 1) << run.diagnosis;
    EXPECT_NE(run.ranks.at(1).how_died.find("SIGABRT"), std::string::npos) << run.ranks.at(1).how_died;
    const std::string& log = run.ranks.at(1).log_tail;
    const auto at = log.find("forked child ");
    ASSERT_NE(at, std::string::npos) << log;
    const long child = std::stol(log.substr(at + 13));
    // Under mpirun the crash ended the pool, folder and all; on a direct launch the dead rank
    // was ended alone (its process group: the child too) and the pool, its folder with it, lives on.
    if (GetParam().launch == "mpirun") {
      EXPECT_FALSE(path_exists(dir)) << "the ended pool's folder is left: " << dir;
    } else {
      EXPECT_EQ(pool.private_dir(), dir);
      EXPECT_EQ(pool.ranks_replaced(), 1);
    }
    expect_sum(pool, GetParam().backend, 2);
    // Ended at once, gone by the end of the next job.
    EXPECT_TRUE(process_is_gone(child)) << "the forked child " << child << " is still there";
  }
  EXPECT_FALSE(path_exists(dir)) << "the pool's folder is left after the pool: " << dir;
  expect_no_child_left();
}

TEST_P(RankPoolHygiene, ARankThatStopsItselfIsAHangBlamedOnItAndIsEnded) {
  {
    RankPool pool = make_pool(2);
    expect_sum(pool, GetParam().backend, 2);
    const auto pids = pool.worker_pids();
    const auto started = Clock::now();
    const JobResult run = pool.run(job(GetParam().backend, "security_stop_self", {{"victim", 0}}, 2s));
    expect_verdict_by(started, 2s);
    EXPECT_EQ(run.status, RunStatus::Hang) << run.diagnosis;
    EXPECT_EQ(run.blamed_rank, 0) << run.diagnosis;
    expect_sum(pool, GetParam().backend, 2);
    for (long pid : pids) EXPECT_TRUE(process_is_gone(pid)) << pid;  // gone by the end of the next job
  }
  expect_no_child_left();
}

INSTANTIATE_TEST_SUITE_P(Backends, RankPoolHygiene, testing::ValuesIn(testing_support::local_pool_kinds()),
                         [](const testing::TestParamInfo<PoolKind>& info) { return info.param.backend; });

}  // namespace
}  // namespace distmetrics::runtime
