#include "conform_command.h"

#include <CLI/CLI.hpp>

#include "distmetrics/app/cli.h"

namespace distmetrics::app {

CLI::App* add_conform_command(CLI::App& app, plugin::ConformOptions& options) {
  auto* cmd = app.add_subcommand("conform",
                                 "check a plugin's (or a Python source's) metrics: every scenario whose metric it "
                                 "provides, every property, and agreement with the reference implementation");
  // Not ->required(): run_conform says what is missing and where to read more.
  cmd->add_option("--plugin", options.plugin, "the plugin's shared library (lib<name>.so); this or --python is required");
  cmd->add_option("--python", options.python,
                  "or a Python source of metrics: pkg.module:factory, pkg.module or file.py (docs/python.md); "
                  "repeatable: every source is checked in one run, on one rank pool per world size")
      ->expected(1)
      ->allow_extra_args(false)  // one source per --python: what follows is a scenario path
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--metric", options.metrics, "check only this metric of the plugin (repeatable)")
      ->expected(1)
      ->allow_extra_args(false)  // one name per --metric: what follows is a scenario path
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  add_selection_options(*cmd, options.paths, options.selection);
  add_deadline_option(*cmd, options.deadline);
  cmd->add_option("--rank-memory", options.rank_memory_gib,
                  "GiB of address space each rank of the local pool may use (RLIMIT_AS), as for `run`; past it the "
                  "variant's outcome is memory_exceeded, naming the rank; 0: no limit")
      ->check(CLI::Range(0.0, 4096.0));
  cmd->add_option("--launcher", options.launcher,
                  "local (a supervised rank pool), mpi (started by mpirun) or env (RANK, WORLD_SIZE, ... set), as for "
                  "`run`; default: the launcher that started this process, else local")
      ->check(CLI::IsMember({"local", "mpi", "env"}));
  cmd->add_option("--json", options.json_file, "write the JSON report to FILE");
  cmd->add_option("--junit", options.junit_file, "write JUnit XML to FILE");
  cmd->add_option("--markdown", options.markdown_file, "write the Markdown report to FILE");
  cmd->add_option("--html", options.html_file, "write a self-contained HTML report to FILE");
  add_console_flags(*cmd, options.console);
  return cmd;
}

}  // namespace distmetrics::app
