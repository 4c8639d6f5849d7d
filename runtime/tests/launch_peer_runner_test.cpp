// The peer launch modes: the probe program started with torchrun-style variables (two
// processes) and by mpirun (-np 2 and 4), on gloo and mpi. Rank 0 reports every job; every
// rank returns the same report; a hang is reported, then the run stops.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <map>
#include <sstream>

#include "../src/launch/pool_store.h"
#include "../src/launch/process.h"
#include "../src/launch/wire.h"
#include "distmetrics/build_config.h"
#include "distmetrics/runtime/backends.h"

namespace distmetrics::runtime {
namespace {

using namespace std::chrono_literals;

struct ProbeOutput {
  std::vector<nlohmann::json> jobs;        // rank 0's reports, in order
  std::map<int, std::vector<std::string>> saw;  // per rank: "<status> <blamed>" per job
  std::map<int, bool> stopped;                  // per rank: refused to run after the hang
  std::map<int, std::vector<std::string>> tcp_listening;  // per rank: TCP ports it listened on
  std::map<int, bool> listeners_checked;                  // per rank: it looked
  std::string text;
};

ProbeOutput parse(const std::string& text) {
  ProbeOutput out;
  out.text = text;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string first;
    words >> first;
    if (first == "VARIANT") {
      out.jobs.push_back(nlohmann::json::parse(line.substr(8)));
    } else if (first == "RANK") {
      int rank = -1;
      std::string what;
      words >> rank >> what;
      if (what == "SAW") {
        std::string status, blamed;
        words >> status >> blamed;
        out.saw[rank].push_back(status + " " + blamed);
      } else if (what == "STOPPED:") {
        out.stopped[rank] = true;
      } else if (what == "TCP_LISTEN") {
        std::string address;
        words >> address;
        out.tcp_listening[rank].push_back(address);
      } else if (what == "LISTENERS_CHECKED") {
        out.listeners_checked[rank] = true;
      }
    }
  }
  return out;
}

// Runs the processes to their end (or kills them at the deadline); returns their exit statuses.
std::vector<int> run_to_end(const std::vector<detail::SpawnSpec>& specs, std::chrono::seconds budget) {
  std::vector<pid_t> pids;
  for (const auto& spec : specs) pids.push_back(detail::spawn_process(spec));
  std::vector<int> statuses;
  const Deadline deadline = Deadline::after(budget);
  for (pid_t pid : pids) {
    auto status = detail::reap_child(pid, deadline);
    if (!status) {
      detail::end_processes(pids, 1s);
      ADD_FAILURE() << "the probe did not finish within " << budget.count() << " s";
      return {};
    }
    statuses.push_back(*status);
  }
  return statuses;
}

void expect_the_probe_story(const ProbeOutput& out, int world_size) {
  ASSERT_EQ(out.jobs.size(), 4u) << out.text;
  EXPECT_EQ(out.jobs[0]["status"], "completed") << out.text;
  for (const auto& rank : out.jobs[0]["ranks"]) {
    EXPECT_EQ(rank["result"]["sum"].get<double>(), world_size * (world_size - 1) / 2.0);
    EXPECT_EQ(rank["result"]["world_size"].get<int>(), world_size);
  }
  EXPECT_EQ(out.jobs[1]["status"], "error");
  EXPECT_NE(out.jobs[1]["diagnosis"].get<std::string>().find("every rank raised std::runtime_error"), std::string::npos);
  EXPECT_EQ(out.jobs[2]["status"], "completed");
  EXPECT_EQ(out.jobs[3]["status"], "hang");
  EXPECT_EQ(out.jobs[3]["blamed_rank"], 1);
  EXPECT_NE(out.jobs[3]["diagnosis"].get<std::string>().find("rank 1 never entered all_reduce(sum) #1 (float64 [4])"),
            std::string::npos) << out.jobs[3]["diagnosis"];
  // Every rank returned rank 0's report, and every rank stopped after the hang.
  const std::vector<std::string> story{"completed -1", "error -1", "completed -1", "hang 1"};
  for (int r = 0; r < world_size; ++r) {
    EXPECT_EQ(out.saw.count(r) ? out.saw.at(r) : std::vector<std::string>{}, story) << "rank " << r << "\n" << out.text;
    EXPECT_TRUE(out.stopped.count(r)) << "rank " << r << " did not stop after the hang";
  }
}

// Every rank on this host: the rendezvous is the private Unix-socket store, so no rank listens on
// a TCP port (the gloo tasks' own sockets are in the tasks' child processes, bound to 127.0.0.1),
// and rank 0 gives no warning about a store on every interface.
void expect_no_tcp_rendezvous(const ProbeOutput& out, int world_size) {
  for (int r = 0; r < world_size; ++r) {
    EXPECT_TRUE(out.listeners_checked.count(r)) << "rank " << r << " did not look\n" << out.text;
    EXPECT_EQ(out.tcp_listening.count(r) ? out.tcp_listening.at(r) : std::vector<std::string>{}, std::vector<std::string>{})
        << "rank " << r << " listens on TCP\n" << out.text;
  }
  EXPECT_EQ(out.text.find("every network interface"), std::string::npos) << out.text;
}

#if DISTMETRICS_HAVE_GLOO
TEST(PeerLaunchEnv, TorchrunStyleVariablesOnTwoProcesses) {
  // A free port for rank 0's store.
  detail::Listener probe_port = detail::listen_on_loopback();
  const std::string port = std::to_string(probe_port.port);
  ::close(probe_port.fd);

  detail::OutputCapture out0("probe-0"), out1("probe-1");
  std::vector<detail::SpawnSpec> specs(2);
  for (int r = 0; r < 2; ++r) {
    specs[r].argv = {DISTMETRICS_PEER_PROBE, "env", "gloo"};
    specs[r].extra_env = {{"RANK", std::to_string(r)}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", std::to_string(r)},
                          {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}};
    specs[r].output_fd = (r == 0 ? out0 : out1).fd();
  }
  const auto statuses = run_to_end(specs, 90s);
  ASSERT_EQ(statuses.size(), 2u);
  const std::string text = out0.tail(1 << 20) + out1.tail(1 << 20);
  for (int status : statuses) EXPECT_EQ(detail::describe_wait_status(status), "exit status 0") << text;
  expect_the_probe_story(parse(text), 2);
  expect_no_tcp_rendezvous(parse(text), 2);
  // The private folder (derived from MASTER_PORT) went with rank 0's runner.
  struct stat info {};
  EXPECT_NE(::lstat(detail::env_launch_store_folder(std::stoi(port)).c_str(), &info), 0);
}

// MASTER_ADDR naming this host without LOCAL_WORLD_SIZE: the ranks cannot know that they are all
// here, so they use the rendezvous of a run across hosts: rank 0 serves the store on the address
// MASTER_ADDR resolves to alone (not on every interface), admitting only connections that show
// DISTMETRICS_RUN_SECRET; without the secret the env launcher refuses to start.
TEST(PeerLaunchEnv, WithoutProofOfOneHostTheStoreListensOnMasterAddrAloneWithTheSecret) {
  char name[256] = {0};
  ASSERT_EQ(::gethostname(name, sizeof(name) - 1), 0);
  detail::Listener probe_port = detail::listen_on_loopback();
  const std::string port = std::to_string(probe_port.port);
  ::close(probe_port.fd);

  for (const bool with_secret : {true, false}) {
    SCOPED_TRACE(with_secret ? "with the secret" : "without the secret");
    detail::OutputCapture out0("probe-0"), out1("probe-1");
    std::vector<detail::SpawnSpec> specs(2);
    for (int r = 0; r < 2; ++r) {
      specs[r].argv = {DISTMETRICS_PEER_PROBE, "env", "gloo"};
      specs[r].extra_env = {{"RANK", std::to_string(r)}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", std::to_string(r)},
                            {"MASTER_ADDR", name}, {"MASTER_PORT", port}};
      if (with_secret) specs[r].extra_env["DISTMETRICS_RUN_SECRET"] = "peer-test-secret";
      specs[r].output_fd = (r == 0 ? out0 : out1).fd();
    }
    const auto statuses = run_to_end(specs, 90s);
    ASSERT_EQ(statuses.size(), 2u);
    const std::string text = out0.tail(1 << 20) + out1.tail(1 << 20);
    if (!with_secret) {
      EXPECT_NE(detail::describe_wait_status(statuses[0]), "exit status 0") << text;
      EXPECT_NE(text.find("ranks on several hosts need the run's secret: set DISTMETRICS_RUN_SECRET"), std::string::npos) << text;
      continue;
    }
    for (int status : statuses) EXPECT_EQ(detail::describe_wait_status(status), "exit status 0") << text;
    const ProbeOutput out = parse(text);
    expect_the_probe_story(out, 2);
    EXPECT_EQ(text.find("every network interface"), std::string::npos) << text;
    char port_hex[8];
    std::snprintf(port_hex, sizeof(port_hex), "%04X", probe_port.port);
    const auto listening = out.tcp_listening.count(0) ? out.tcp_listening.at(0) : std::vector<std::string>{};
    // "0100007F:ABCD" style: the address part is not all zeros (not INADDR_ANY).
    EXPECT_TRUE(std::any_of(listening.begin(), listening.end(), [&](const std::string& a) {
      return a.size() == 13 && a.substr(9) == port_hex && a.substr(0, 8) != "00000000";
    })) << "rank 0 does not listen on one address at port " << port << "\n" << text;
    EXPECT_FALSE(std::any_of(listening.begin(), listening.end(), [&](const std::string& a) {
      return a.substr(a.size() - 4) == port_hex && a.find_first_not_of('0') == a.size() - 5;
    })) << "rank 0 listens on *:" << port << "\n" << text;
    EXPECT_EQ(out.tcp_listening.count(1), 0u) << text;
  }
}

#endif

#if DISTMETRICS_HAVE_MPI
class PeerLaunch : public testing::TestWithParam<std::string> {};  // the backend

TEST_P(PeerLaunch, MpirunWithTwoAndFourRanks) {
  for (int np : {2, 4}) {
    SCOPED_TRACE("mpirun -np " + std::to_string(np));
    detail::OutputCapture out("mpirun");
    detail::SpawnSpec spec;
    spec.argv = {DISTMETRICS_MPIEXEC, "-np", std::to_string(np), "--oversubscribe", "--bind-to", "none",
                 "--tag-output", DISTMETRICS_PEER_PROBE, "mpi", GetParam()};
    // Its own temporary folder: the private rendezvous (in mpirun's session folder beneath it)
    // must be gone afterwards, even after the mpi backend's MPI_Abort.
    char scratch[] = "/tmp/dm_peer_XXXXXX";
    ASSERT_NE(::mkdtemp(scratch), nullptr);
    spec.extra_env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
                      {"OMPI_MCA_btl_vader_single_copy_mechanism", "none"}, {"TMPDIR", scratch},
                      {"OMPI_MCA_orte_tmpdir_base", scratch}};
    spec.output_fd = out.fd();
    const auto statuses = run_to_end({spec}, 120s);
    ASSERT_EQ(statuses.size(), 1u);
    std::vector<std::string> left;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(scratch)) left.push_back(entry.path().string());
    EXPECT_EQ(left, std::vector<std::string>{}) << "left behind in the run's temporary folder";
    std::filesystem::remove_all(scratch);
    const std::string tagged = out.tail(1 << 20);
    std::string text;  // each rank's lines, whole (mpirun interleaves their chunks)
    for (int r = 0; r < np; ++r) text += detail::mpirun_rank_output(tagged, r, r == np - 1);
    // After a hang the mpi backend leaves a collective pending, so the ranks cannot finalise MPI
    // and mpirun reports the job as failed; gloo ranks leave cleanly.
    if (GetParam() == "mpi") EXPECT_NE(detail::describe_wait_status(statuses[0]), "exit status 0") << text;
    else EXPECT_EQ(detail::describe_wait_status(statuses[0]), "exit status 0") << text;
    expect_the_probe_story(parse(text), np);
    expect_no_tcp_rendezvous(parse(text), np);
  }
}

// Processes whose command line holds `marker` (the probe's ranks, and what their tasks forked).
std::vector<long> processes_with(const std::string& marker) {
  std::vector<long> found;
  if (DIR* proc = ::opendir("/proc")) {
    while (const dirent* e = ::readdir(proc)) {
      const long pid = std::atol(e->d_name);
      if (pid <= 0) continue;
      std::ifstream file(std::string("/proc/") + e->d_name + "/cmdline");
      std::string cmdline((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
      if (cmdline.find(marker) != std::string::npos) found.push_back(pid);
    }
    ::closedir(proc);
  }
  return found;
}

size_t files_under(const std::string& dir) {
  size_t n = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      n += e->d_type == DT_DIR ? 1 + files_under(dir + "/" + name) : 1;
    }
    ::closedir(d);
  }
  return n;
}

struct PeerFault {
  std::string backend;
  std::string fault;
  int rank;
  std::string status;    // rank 0's report
  int exit_code;         // mpirun's: the runner's (3 hang, 4 crash)
  std::string how_died;  // the blamed rank's, "" for none
};

// Faults in a rank's task under `mpirun -np 2` (--launcher mpi): rank 0 reports the right kind and
// blame, mpirun exits with the runner's code within a bound (no rank left in MPI_Finalize), and
// nothing is left: no process of the run (nor what a task forked), nothing in mpirun's session
// folder (Open MPI's shared-memory segments are kept there, not in /dev/shm).
TEST(PeerLaunchFaults, FaultsUnderMpirunAreReportedWithTheRunnersExitCode) {
  std::vector<PeerFault> faults{
      {"gloo", "segfault", 1, "crash", 4, "killed by signal 11 (SIGSEGV)"},
      {"gloo", "abort", 0, "crash", 4, "killed by signal 6 (SIGABRT)"},
      {"gloo", "exit3", 1, "crash", 4, "exit status 3 (the task's process exited inside the task)"},
      {"gloo", "fork_crash", 1, "crash", 4, "killed by signal 11 (SIGSEGV)"},
      {"gloo", "loop", 1, "hang", 3, ""},
      {"gloo", "sigstop", 1, "hang", 3, "stopped by SIGSTOP"},
      {"gloo", "skip_collective", 0, "hang", 3, ""},
      {"gloo", "throw", 1, "hang", 3, ""},
      {"gloo", "raw_gloo_skip", 1, "hang", 3, ""},
  };
  if (std::find(compiled_backends().begin(), compiled_backends().end(), "mpi") != compiled_backends().end()) {
    // The mpi backend runs the task in each rank's MPI agent (forked before MPI_Init): a crash
    // there takes only the agent, so rank 0 still reports it; after a hang or a crash the job is
    // ended with the runner's code instead of waiting in MPI_Finalize for the stuck rank.
    faults.push_back({"mpi", "segfault", 1, "crash", 4, "killed by signal 11 (SIGSEGV)"});
    faults.push_back({"mpi", "abort", 0, "crash", 4, "killed by signal 6 (SIGABRT)"});
    faults.push_back({"mpi", "exit3", 1, "crash", 4, "exit status 3 (the task's process exited inside the task)"});
    faults.push_back({"mpi", "fork_crash", 1, "crash", 4, "killed by signal 11 (SIGSEGV)"});
    faults.push_back({"mpi", "loop", 1, "hang", 3, ""});
    faults.push_back({"mpi", "sigstop", 1, "hang", 3, "stopped by SIGSTOP"});
    faults.push_back({"mpi", "skip_collective", 1, "hang", 3, ""});
  }
  const std::string scratch = ::testing::TempDir() + "peer_faults_" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(scratch.c_str(), 0700), 0);
  for (const auto& f : faults) {
    SCOPED_TRACE(f.backend + " " + f.fault + " on rank " + std::to_string(f.rank));
    const std::string session = scratch + "/session";
    ASSERT_EQ(::mkdir(session.c_str(), 0700), 0);
    const std::string pid_file = scratch + "/forked-" + f.backend + "-" + f.fault;
    detail::OutputCapture out("mpirun");
    detail::SpawnSpec spec;
    spec.argv = {DISTMETRICS_MPIEXEC, "-np", "2", "--oversubscribe", "--bind-to", "none", "--tag-output",
                 DISTMETRICS_PEER_PROBE, "mpi", f.backend, f.fault, std::to_string(f.rank), pid_file};
    spec.extra_env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
                      {"OMPI_MCA_btl_vader_single_copy_mechanism", "none"}, {"OMPI_MCA_orte_tmpdir_base", session}};
    spec.output_fd = out.fd();
    const auto started = std::chrono::steady_clock::now();
    const auto statuses = run_to_end({spec}, 60s);
    const auto took = std::chrono::steady_clock::now() - started;
    ASSERT_EQ(statuses.size(), 1u);
    const std::string tagged = out.tail(1 << 20);
    const ProbeOutput probe = parse(detail::mpirun_rank_output(tagged, 0, true));
    EXPECT_EQ(detail::describe_wait_status(statuses[0]), "exit status " + std::to_string(f.exit_code)) << tagged;
    // Deadline 2 s, report grace 2 s, mpirun's start and teardown: a bound on hanging.
    EXPECT_LT(took, 40s);
    ASSERT_EQ(probe.jobs.size(), 1u) << tagged;
    const auto& report = probe.jobs[0];
    EXPECT_EQ(report["status"], f.status) << report.dump(1);
    EXPECT_EQ(report["blamed_rank"], f.rank) << report.dump(1);
    if (!f.how_died.empty()) { EXPECT_EQ(report["ranks"][f.rank]["how_died"], f.how_died) << report.dump(1); }
    EXPECT_TRUE(processes_with(pid_file).empty()) << "processes of the run are left";
    EXPECT_EQ(files_under(session), 0u) << "mpirun's session folder is not empty";
    ::rmdir(session.c_str());
    std::remove(pid_file.c_str());
  }
  ::rmdir(scratch.c_str());
}

std::vector<std::string> cpu_backends() {
  std::vector<std::string> out;
  for (const auto& b : compiled_backends()) {
    if (b != "nccl") out.push_back(b);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Backends, PeerLaunch, testing::ValuesIn(cpu_backends()),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });
#endif

}  // namespace
}  // namespace distmetrics::runtime
