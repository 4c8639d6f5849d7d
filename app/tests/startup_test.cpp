// What the `distmetrics` program loads for a command (app/CMakeLists.txt: the front, the command
// proper, the Python module; LibTorch's CUDA side on demand), read from the dynamic loader's own
// account of every object a process opens (LD_DEBUG=files): --help and --version load no LibTorch
// at all and say what cli_main says; the commands that run no tensor code load LibTorch's CPU side
// and none of its CUDA side, Python or NCCL, and skip what needs a GPU as before.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "distmetrics/app/cli.h"
#include "distmetrics/build_config.h"
#include "distmetrics/harness/placement.h"
#include "distmetrics/runtime/backends.h"

namespace fs = std::filesystem;

namespace {

struct Ran {
  int code = -1;
  std::string out;
  std::string loaded;  // the loader's log (LD_DEBUG=files, on stderr): one "file=NAME [...]" line per object
};

std::string slurp(int fd) {
  std::string text;
  char buffer[65536];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  return text;
}

// Runs the program with `args` and LD_DEBUG=files; its stdout and its stderr go to files (the log
// of a command that starts rank workers is long), read back when it has exited.
Ran run_program(const std::vector<std::string>& args) {
  const fs::path dir = fs::temp_directory_path() / ("dm_startup_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string out_path = (dir / "out").string(), err_path = (dir / "err").string();
  const pid_t child = ::fork();
  if (child == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::setenv("LD_DEBUG", "files", 1);
    std::vector<std::string> argv_strings = {DISTMETRICS_CLI_BIN};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  Ran ran;
  ran.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const int out = ::open(out_path.c_str(), O_RDONLY), err = ::open(err_path.c_str(), O_RDONLY);
  ran.out = slurp(out);
  ran.loaded = slurp(err);
  ::close(out);
  ::close(err);
  fs::remove_all(dir);
  return ran;
}

// The loader's line for an object it mapped ("generating link map") whose file name starts with
// `prefix` ("libtorch_cuda"), or "".
std::string loaded(const Ran& ran, const std::string& prefix) {
  std::istringstream lines(ran.loaded);
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find("file=");
    if (at == std::string::npos || line.find("generating link map") == std::string::npos) continue;
    std::string name = line.substr(at + 5, line.find_first_of(" \t", at) - at - 5);
    name = name.substr(name.find_last_of('/') + 1);
    if (name.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

std::string in_process(const std::vector<std::string>& args, int& code) {
  std::vector<std::string> all = {DISTMETRICS_CLI_BIN};  // the usage line names the program
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  std::ostringstream out, err;
  code = distmetrics::app::cli_main(static_cast<int>(argv.size()), argv.data(), out, err);
  return out.str();
}

// The CUDA LibTorch's pieces that a command running no tensor code must not load.
const std::vector<std::string> kCudaSide = {"libtorch_cuda", "libc10_cuda", "libnccl", "libcublas", "libcudnn",
                                            "libtorch_python", "libpython", "libdistmetrics_nccl", "libdistmetrics_gloo_python",
                                            "libdistmetrics_cli_python"};

bool split_build() { return std::string(DISTMETRICS_TEST_TORCH_CUDA_LIBRARY).size() > 0; }

}  // namespace

TEST(Startup, HelpAndVersionComeFromTheFrontWithoutLibTorch) {
  for (const std::string flag : {"--version", "--help", "-h"}) {
    const Ran ran = run_program({flag});
    int code = -1;
    const std::string expected = in_process({flag}, code);
    EXPECT_EQ(ran.code, 0) << flag;
    EXPECT_EQ(code, 0) << flag;
    EXPECT_EQ(ran.out, expected) << flag << ": the front and cli_main say the same";
    EXPECT_FALSE(ran.out.empty()) << flag;
    ASSERT_NE(loaded(ran, "libc.so"), "") << "LD_DEBUG=files gave no log:\n" << ran.loaded;
    for (const std::string prefix : {"libtorch", "libc10", "libdistmetrics_"})
      EXPECT_EQ(loaded(ran, prefix), "") << flag << " loaded " << prefix << "*";
  }
  // Anything else is the command proper's (here, the help of one command).
  const Ran ran = run_program({"list", "--help"});
  EXPECT_EQ(ran.code, 0);
  EXPECT_NE(ran.out.find("--allow-python"), std::string::npos) << ran.out;
  EXPECT_NE(loaded(ran, "libdistmetrics_cli"), "");
}

TEST(Startup, CommandsThatRunNoTensorCodeLoadNoneOfLibTorchsCudaSide) {
  const fs::path dir = fs::temp_directory_path() / ("dm_startup_scenarios_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // Every backend and placement, so that list works out every skip reason there is.
  std::ofstream(dir / "every_device.toml")
      << "description = \"every backend and placement\"\nscript = [\"update\", \"compute\"]\n"
      << "[metric]\nname = \"MeanAbsoluteError\"\n"
      << "[data]\ngenerator = \"regression\"\nseed = 1\nnum_samples = 8\nbatch_size = 4\n"
      << "[variants]\nworld_sizes = [1, 2]\nbackends = [\"gloo\", \"nccl\", \"mpi\"]\nshards = [\"even\"]\n"
      << "placements = [\"cpu\", \"cuda\", \"cuda0\", \"cpu_state_cuda_input\", \"mixed\"]\n";
  const Ran list = run_program({"list", "--json", dir.string()});
  const Ran validate = run_program({"validate", dir.string()});
  const Ran metrics = run_program({"metrics"});
  EXPECT_EQ(list.code, 0) << list.out;
  EXPECT_EQ(validate.code, 0) << validate.out;
  EXPECT_EQ(metrics.code, 0);
  EXPECT_NE(metrics.out.find("MeanAbsoluteError"), std::string::npos);
  for (const auto& [command, ran] : {std::pair{"list", &list}, {"validate", &validate}, {"metrics", &metrics}}) {
    EXPECT_NE(loaded(*ran, "libtorch_cpu"), "") << command;
    if (!split_build()) continue;  // a CPU-only LibTorch, or one linked whole: nothing to leave out
    for (const auto& prefix : kCudaSide) EXPECT_EQ(loaded(*ran, prefix), "") << command << " loaded " << prefix << "*";
  }
  // The skip reasons are what this process works out with LibTorch's own GPU count (this test
  // program links LibTorch whole, CUDA side included): the command counted without it.
  const int gpus = distmetrics::runtime::visible_gpu_count();
  const auto variants = nlohmann::json::parse(list.out);
  ASSERT_EQ(variants.size(), 3u * (5u + 4u));  // world size 1 has no mixed placement
  for (const auto& v : variants) {
    const auto expected = distmetrics::harness::skip_reason(v["placement"], v["backend"], v["world_size"], gpus);
    EXPECT_EQ(v["skip"].is_null() ? "" : v["skip"].get<std::string>(), expected ? expected->text : "") << v.dump();
  }
  fs::remove_all(dir);
}
