#include "worker_args.h"

#include <cstring>

#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime::detail {
namespace {
constexpr const char* kControl = "--distmetrics-worker=";
constexpr const char* kRank = "--distmetrics-worker-rank=";
constexpr const char* kWorldSize = "--distmetrics-worker-world-size=";
constexpr const char* kLaunch = "--distmetrics-worker-launch=";
constexpr const char* kMemory = "--distmetrics-worker-memory=";

int parse_int(const std::string& flag, const std::string& text) {
  try {
    size_t used = 0;
    const int value = std::stoi(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw ConfigError("worker flag " + flag + ": '" + text + "' is not an integer");
}
}  // namespace

std::vector<std::string> worker_flags(const WorkerArgs& args) {
  std::vector<std::string> flags{kControl + args.socket_path, kWorldSize + std::to_string(args.world_size), kLaunch + args.launch};
  if (args.rank >= 0) flags.push_back(kRank + std::to_string(args.rank));
  if (args.memory_bytes > 0) flags.push_back(kMemory + std::to_string(args.memory_bytes));
  return flags;
}

std::optional<WorkerArgs> parse_worker_flags(int argc, char** argv) {
  std::optional<WorkerArgs> args;
  auto value_of = [](const char* arg, const char* prefix) -> std::optional<std::string> {
    if (std::strncmp(arg, prefix, std::strlen(prefix)) == 0) return std::string(arg + std::strlen(prefix));
    return std::nullopt;
  };
  for (int i = 1; i < argc; ++i) {
    if (auto control = value_of(argv[i], kControl)) {
      if (!args) args.emplace();
      if (control->empty() || control->front() != '/') {
        throw ConfigError(std::string(kControl) + " needs the absolute path of the supervisor's socket, got '" + *control + "'");
      }
      args->socket_path = *control;
    }
  }
  if (!args) return std::nullopt;
  for (int i = 1; i < argc; ++i) {
    if (auto v = value_of(argv[i], kRank)) args->rank = parse_int(kRank, *v);
    if (auto v = value_of(argv[i], kWorldSize)) args->world_size = parse_int(kWorldSize, *v);
    if (auto v = value_of(argv[i], kLaunch)) args->launch = *v;
    if (auto v = value_of(argv[i], kMemory)) {
      try {
        args->memory_bytes = std::stoull(*v);
      } catch (const std::exception&) {
        throw ConfigError(std::string(kMemory) + " needs a number of bytes, got '" + *v + "'");
      }
    }
  }
  return args;
}

}  // namespace distmetrics::runtime::detail
