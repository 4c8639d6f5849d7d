#include "commands.h"

#include <CLI/CLI.hpp>

#include <ostream>
#include <string_view>

#include "distmetrics/build_config.h"

namespace distmetrics::app {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"list", "print the variant ids the scenarios expand into"},
      {"validate", "check scenario files; print every error with file, line and field"},
      {"run", "run the variants and check their properties"},
      {"serve",
       "run variants named on stdin, one per line (an id, or {\"path\": ..., \"id\": ...}), answering each with one "
       "JSON line on stdout; the rank pools stay up between them (the pytest plugin's runner)"},
      {"conform",
       "check a plugin's (or a Python source's) metrics: every scenario whose metric it provides, every property, and "
       "agreement with the reference implementation"},
      {"metrics",
       "list the metrics scenarios can name, with their parameters' types, defaults and choices (the reference "
       "metrics, or with --plugin a plugin's)"},
      {"explore",
       "search scenarios at random for a time budget and shrink every failure to a minimal scenario file "
       "(docs/explore.md)"},
      {"tables",
       "print the tables tools read instead of copying them: exit codes, outcomes, properties (and the default "
       "list), backends, shard policies, placements, the reference metrics' parameters, metric sources"},
  };
  return table;
}

std::unique_ptr<CLI::App> make_main_app() {
  auto app = std::make_unique<CLI::App>(
      "distmetrics: checks that distributed metrics give on N ranks what they give on one, that compute() is "
      "idempotent, and that nothing hangs.");
  app->require_subcommand(1);
  app->set_version_flag("--version", std::string("distmetrics ") + DISTMETRICS_VERSION + " (LibTorch " +
                                         DISTMETRICS_TORCH_VERSION + ")",
                        "print the version of distmetrics and of the LibTorch it was built with, and exit");
  for (const auto& command : commands()) app->add_subcommand(command.name, command.description);
  return app;
}

std::optional<int> answer_help_or_version(int argc, char** argv, std::ostream& out) {
  if (argc != 2) return std::nullopt;
  const std::string_view flag = argv[1];
  if (flag != "--help" && flag != "-h" && flag != "--version") return std::nullopt;
  const auto app = make_main_app();
  try {
    app->parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app->help();
    return 0;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError&) {
  }
  return std::nullopt;
}

}  // namespace distmetrics::app
