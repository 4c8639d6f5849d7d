// Running `distmetrics conform` in a child process and reading its JSON report, for the
// conformance tests.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace conform_test {

struct Run {
  int rc = -1;
  std::string output;  // stdout and stderr together
  nlohmann::json report;  // the --json report, when one was asked for and written
};

inline std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

inline std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("distmetrics_conform_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// Runs `<binary> <args>`; with `json_name`, adds --json <temp file> and reads it back.
inline Run run_command(const std::string& binary, const std::string& args, const std::string& json_name = "") {
  Run run;
  std::string command = quote(binary) + " " + args;
  std::string json_path;
  if (!json_name.empty()) {
    json_path = temp_file(json_name);
    std::filesystem::remove(json_path);
    command += " --json " + quote(json_path);
  }
  command += " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) {
    ADD_FAILURE() << "cannot run " << command;
    return run;
  }
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) run.output.append(buffer, n);
  const int status = ::pclose(pipe);
  run.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (!json_path.empty()) {
    std::ifstream in(json_path);
    if (in) run.report = nlohmann::json::parse(in, nullptr, false);
    std::filesystem::remove(json_path);
  }
  return run;
}

inline const nlohmann::json* variant(const nlohmann::json& report, const std::string& id) {
  if (!report.is_object() || !report.contains("variants")) return nullptr;
  for (const auto& v : report.at("variants"))
    if (v.at("id") == id) return &v;
  return nullptr;
}

// The names of the properties that failed on a variant.
inline std::set<std::string> failed_properties(const nlohmann::json& v) {
  std::set<std::string> out;
  for (const auto& p : v.at("properties"))
    if (p.at("outcome") == "fail") out.insert(p.at("name").get<std::string>());
  return out;
}

inline std::string outcome(const nlohmann::json& report, const std::string& id) {
  const auto* v = variant(report, id);
  return v ? v->at("outcome").get<std::string>() : "(no such variant)";
}

}  // namespace conform_test
