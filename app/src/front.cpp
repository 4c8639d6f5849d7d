// The distmetrics executable: a front that links no LibTorch. It answers `--help` and
// `--version` itself (a few milliseconds), and for everything else loads the command proper,
// libdistmetrics_cli.so (entry.cpp: LibTorch's CPU side, the scenario engine, the runtime), and
// hands it the command line. The rank workers the command starts run this same program, so they
// take the same road.
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "commands.h"

namespace {

// Where the command proper is: beside the front in the install's and the build's layout
// (DISTMETRICS_CLI_LIBRARY: "../lib/libdistmetrics_cli.so", relative to this program's folder).
std::string cli_library() {
  char self[PATH_MAX];
  if (::realpath("/proc/self/exe", self) == nullptr) return DISTMETRICS_CLI_LIBRARY;
  std::string folder(self);
  folder.erase(folder.find_last_of('/') + 1);
  return folder + DISTMETRICS_CLI_LIBRARY;
}

// 127: what the shell and the dynamic loader give when a program's library is missing.
constexpr int kCannotLoad = 127;

}  // namespace

int main(int argc, char** argv) {
  if (const auto code = distmetrics::app::answer_help_or_version(argc, argv, std::cout)) {
    std::cout.flush();
    return *code;
  }
  const std::string path = cli_library();
  // RTLD_GLOBAL: what the command loads later (the embedded Python's extension modules, torch's
  // among them) resolves against libpython and LibTorch as in a program linked with them.
  void* cli = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_GLOBAL);
  if (cli == nullptr) {
    std::fprintf(stderr, "distmetrics: cannot load the command (%s): %s\n", path.c_str(), ::dlerror());
    return kCannotLoad;
  }
  using Entry = int (*)(int, char**);
  auto entry = reinterpret_cast<Entry>(::dlsym(cli, "distmetrics_cli_main"));
  if (entry == nullptr) {
    std::fprintf(stderr, "distmetrics: %s has no entry point distmetrics_cli_main: %s\n", path.c_str(), ::dlerror());
    return kCannotLoad;
  }
  return entry(argc, argv);  // leaves the process itself (entry.cpp)
}
