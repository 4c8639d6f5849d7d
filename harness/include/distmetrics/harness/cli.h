// The distmetrics command line (docs/cli-contract.md):
//   distmetrics list     [PATHS...] [SELECTION] [--json]
//   distmetrics validate [PATHS...]
//   distmetrics run      [PATHS...] [SELECTION] [--deadline SECONDS] [--launcher local|mpi|env]
//                        [--json FILE] [--junit FILE] [--quiet]
//   SELECTION: [--backend B[,B..]] [--world-sizes 1,2,4] [--shard S[,S..]] [--placement P[,P..]]
//              [--filter GLOB]...
#pragma once

#include <iosfwd>
#include <string>

namespace distmetrics::harness {

// Runs one command; returns the exit code (0 ok, 1 a property failed or an error outcome,
// 2 bad input, 3 a hang, 4 a crash). `argv[0]` is the program name.
int cli_main(int argc, char** argv, std::ostream& out, std::ostream& err);

// Where scenarios are looked for when no path is given: ./scenarios if it exists, else the
// installed scenario folder.
std::string default_scenario_path();

}  // namespace distmetrics::harness
