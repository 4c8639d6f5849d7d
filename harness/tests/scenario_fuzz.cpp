// A fuzz target for the scenario parser: random and structure-aware mutations of the shipped
// scenarios, each loaded with load_scenario_text(). Loading must give a scenario or diagnostics,
// never throw, crash, abort, or allocate more than a small budget (RLIMIT_AS turns that into a
// bad_alloc here). First every kept regression file (scenarios/fuzz/, every crasher ever found)
// is loaded; then mutations run until the time is up.
//
//   scenario_fuzz --corpus DIR [--corpus DIR]... --regressions DIR [--seconds S] [--seed N]
//                 [--crashers DIR [--keep-current 1]]
// An input that throws is kept in CRASHERS as crash-<hash>.toml and the exit code is 1. With
// --keep-current 1 each input is first written to CRASHERS/current.toml (slower), so that an
// input that kills the process is on disk. tools/fuzz_scenarios.sh runs it for longer.
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "distmetrics/harness/scenario.h"

namespace fs = std::filesystem;
namespace dh = distmetrics::harness;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  return text;
}

// Values a parser and the checks after it must survive.
const std::vector<std::string> kValues = {
    "0", "-1", "1", "2", "-0.0", "1e308", "-1e308", "1e-9", "inf", "-inf", "nan", "2147483648", "9223372036854775807",
    "-9223372036854775808", "30000", "65", "1000000", "\"\"", "\"x\"", "[]", "[[]]", "{}", "true", "false",
    "\"Average@/nonexistent/lib.so\"", "\"ConfusionMatrix\"", "\"../../etc/passwd\"", "1979-05-27T07:32:00Z",
    "\"\\u0000\"", "'''\nmulti\n'''", "[1, 2, 3]", "[\"even\", \"evne\"]", "{ num_classes = 30000 }",
    "\"$(touch pwned)\""};
const std::vector<std::string> kHeaders = {"[metric]", "[data]", "[variants]", "[expect]", "[golden]", "[[script]]",
                                           "[batch_invariant]", "[metric.params]", "[data.params]", "[a.b.c.d.e]",
                                           "[metric]\nname = \"Accuracy\""};

class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : rng_(seed) {}

  std::string mutate(const std::string& input, const std::vector<std::string>& corpus) {
    std::string text = input;
    const int rounds = 1 + pick(4);
    for (int i = 0; i < rounds; ++i) text = once(text, corpus);
    if (text.size() > 64 * 1024) text.resize(64 * 1024);
    return text;
  }

 private:
  std::size_t pick(std::size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }

  std::string once(const std::string& text, const std::vector<std::string>& corpus) {
    auto lines = lines_of(text);
    switch (pick(10)) {
      case 0: {  // flip a byte
        std::string t = text;
        if (!t.empty()) t[pick(t.size())] = static_cast<char>(pick(256));
        return t;
      }
      case 1: {  // insert random bytes
        std::string t = text;
        std::string junk;
        for (std::size_t n = 1 + pick(8); n > 0; --n) junk += static_cast<char>(pick(256));
        t.insert(pick(t.size() + 1), junk);
        return t;
      }
      case 2: {  // cut a chunk
        std::string t = text;
        if (t.empty()) return t;
        const std::size_t at = pick(t.size());
        t.erase(at, 1 + pick(32));
        return t;
      }
      case 3:  // a value replaced with an interesting one
      case 4: {
        if (lines.empty()) return text;
        auto& line = lines[pick(lines.size())];
        const auto eq = line.find('=');
        if (eq != std::string::npos) line = line.substr(0, eq + 1) + " " + kValues[pick(kValues.size())];
        return joined(lines);
      }
      case 5: {  // a line duplicated, dropped or swapped
        if (lines.size() < 2) return text;
        const std::size_t a = pick(lines.size()), b = pick(lines.size());
        const std::size_t how = pick(3);
        if (how == 0) lines.insert(lines.begin() + static_cast<long>(a), lines[b]);
        else if (how == 1) lines.erase(lines.begin() + static_cast<long>(a));
        else std::swap(lines[a], lines[b]);
        return joined(lines);
      }
      case 6: {  // a table header inserted
        lines.insert(lines.begin() + static_cast<long>(pick(lines.size() + 1)), kHeaders[pick(kHeaders.size())]);
        return joined(lines);
      }
      case 7: {  // a line spliced in from another scenario
        const auto other = lines_of(corpus[pick(corpus.size())]);
        if (other.empty()) return text;
        lines.insert(lines.begin() + static_cast<long>(pick(lines.size() + 1)), other[pick(other.size())]);
        return joined(lines);
      }
      case 8: {  // a key renamed to a close or unknown one
        if (lines.empty()) return text;
        auto& line = lines[pick(lines.size())];
        const auto eq = line.find('=');
        if (eq != std::string::npos && eq > 0) line.insert(pick(eq), "x");
        return joined(lines);
      }
      default: {  // deep nesting
        const std::size_t depth = 1 + pick(200);
        std::string nest = "x = " + std::string(depth, '[') + "1" + std::string(depth, ']');
        lines.insert(lines.begin() + static_cast<long>(pick(lines.size() + 1)), nest);
        return joined(lines);
      }
    }
  }

  std::mt19937_64 rng_;
};

struct Args {
  std::vector<std::string> corpus_dirs;
  std::string regressions;
  std::string crashers;
  bool keep_current = false;
  double seconds = 20;
  std::uint64_t seed = 1;
};

// Loads one input; returns false (and keeps it) when loading threw.
bool survives(const std::string& text, const std::string& crashers, bool keep_current, const std::string& label) {
  if (!crashers.empty() && keep_current) {
    std::ofstream(fs::path(crashers) / "current.toml", std::ios::binary) << text;
  }
  try {
    const auto result = dh::load_scenario_text(text, "fuzz.toml", "fuzz/input");
    if (!result.scenario && result.diagnostics.empty()) throw std::runtime_error("neither a scenario nor a diagnostic");
    for (const auto& d : result.diagnostics) {
      if (d.message.empty()) throw std::runtime_error("a diagnostic without a message");
    }
    return true;
  } catch (const std::exception& e) {
    std::cerr << "scenario_fuzz: " << label << ": loading threw: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "scenario_fuzz: " << label << ": loading threw something that is not a std::exception\n";
  }
  if (!crashers.empty()) {
    const auto name = "crash-" + std::to_string(std::hash<std::string>{}(text)) + ".toml";
    std::ofstream(fs::path(crashers) / name, std::ios::binary) << text;
    std::cerr << "  kept as " << (fs::path(crashers) / name).string() << "\n";
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--corpus") args.corpus_dirs.push_back(value);
    else if (flag == "--regressions") args.regressions = value;
    else if (flag == "--crashers") args.crashers = value;
    else if (flag == "--keep-current") args.keep_current = value == "1";
    else if (flag == "--seconds") args.seconds = std::stod(value);
    else if (flag == "--seed") args.seed = std::stoull(value);
    else {
      std::cerr << "scenario_fuzz: unknown flag " << flag << "\n";
      return 2;
    }
  }
  // Validating a scenario must never allocate much: past 3 GiB of address space an allocation
  // fails here (a bad_alloc that escapes is a crasher).
  rlimit limit{std::uint64_t{3} << 30, std::uint64_t{3} << 30};
  setrlimit(RLIMIT_AS, &limit);

  std::vector<std::string> corpus;
  for (const auto& dir : args.corpus_dirs) {
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (entry.is_regular_file() && entry.path().extension() == ".toml") corpus.push_back(read_file(entry.path()));
    }
  }
  if (corpus.empty()) {
    std::cerr << "scenario_fuzz: no .toml file in the corpus folders\n";
    return 2;
  }
  int failures = 0;
  std::size_t regressions = 0;
  if (!args.regressions.empty()) {
    for (const auto& entry : fs::directory_iterator(args.regressions)) {
      if (entry.path().extension() != ".toml" || entry.path().filename() == "current.toml") continue;
      ++regressions;
      failures += !survives(read_file(entry.path()), "", false, entry.path().string());
    }
  }
  Mutator mutator(args.seed);
  std::mt19937_64 choose(args.seed ^ 0x9e3779b97f4a7c15ull);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(args.seconds);
  std::size_t inputs = 0;
  while (std::chrono::steady_clock::now() < until && failures < 10) {
    const std::string& base = corpus[std::uniform_int_distribution<std::size_t>(0, corpus.size() - 1)(choose)];
    failures += !survives(mutator.mutate(base, corpus), args.crashers, args.keep_current, "input " + std::to_string(inputs));
    ++inputs;
  }
  std::cout << "scenario_fuzz: " << regressions << " regression file(s) and " << inputs << " mutated input(s) from "
            << corpus.size() << " scenario(s), seed " << args.seed << ": " << failures << " failure(s)\n";
  return failures == 0 ? 0 : 1;
}
