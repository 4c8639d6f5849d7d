// The commands of `distmetrics`: ONE table of names and descriptions, and the main command they
// hang from (its description, --help and --version). LibTorch-free: the front program
// (front.cpp) answers `--help` and `--version` from it before LibTorch is loaded at all, and
// cli_main() builds the same main command and gives each command its options.
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace distmetrics::app {

struct Command {
  std::string name;         // what follows `distmetrics`
  std::string description;  // one line, for the help
};

// Every command, in the order the help lists them.
const std::vector<Command>& commands();

// The main command with every command of the table as a subcommand (no options yet: cli_main
// adds them), one of which is required, and --version.
std::unique_ptr<CLI::App> make_main_app();

// `distmetrics --help` (or -h) and `distmetrics --version`, nothing else on the line: prints the
// answer to `out` and returns 0. Anything else: nullopt (the command proper handles it).
std::optional<int> answer_help_or_version(int argc, char** argv, std::ostream& out);

}  // namespace distmetrics::app
