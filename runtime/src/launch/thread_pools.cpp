#include "distmetrics/runtime/thread_pools.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>

namespace distmetrics::runtime {
namespace {

std::mutex held_mutex;
bool held = false;
std::vector<std::pair<std::string, std::string>> user_values;  // name, value: set and not "1"

}  // namespace

const std::vector<ThreadPoolVariable>& thread_pool_variables() {
  static const std::vector<ThreadPoolVariable> table = {
      {"OPENBLAS_NUM_THREADS", "OpenBLAS (numpy, scipy)"},
      {"GOTO_NUM_THREADS", "OpenBLAS, when OPENBLAS_NUM_THREADS is unset"},
      {"OMP_NUM_THREADS", "OpenMP runtimes loaded later (libgomp, libiomp); OpenBLAS when the two above are unset"},
      {"MKL_NUM_THREADS", "Intel MKL"},
      {"BLIS_NUM_THREADS", "BLIS"},
      // Hugging Face tokenizers start a rayon pool (a thread per core) at their first batch encode
      // unless told not to: InfoLM's tokenizer did so in conform's process, and the zygote could
      // not fork the rank workers any more (each then imported the sources: a peer run 2x slower).
      {"TOKENIZERS_PARALLELISM", "Hugging Face tokenizers (transformers' fast tokenizers; its rayon pool)", "false"},
  };
  return table;
}

void hold_thread_pools_at_one() {
  std::lock_guard<std::mutex> lock(held_mutex);
  if (held) return;
  held = true;
  for (const auto& variable : thread_pool_variables()) {
    const char* value = std::getenv(variable.name);
    if (value != nullptr && std::string(value) != variable.held) user_values.emplace_back(variable.name, value);
    ::setenv(variable.name, variable.held, /*overwrite=*/1);
  }
}

std::string held_thread_pool_settings() {
  std::lock_guard<std::mutex> lock(held_mutex);
  std::string out;
  for (const auto& [name, value] : user_values) out += (out.empty() ? "" : ", ") + name + "=" + value;
  return out;
}

std::string other_threads_description() {
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return "(cannot read /proc/self/task)";
  const std::string self = std::to_string(::gettid());
  std::map<std::string, int> by_name;
  int others = 0;
  while (dirent* entry = ::readdir(dir)) {
    const std::string tid = entry->d_name;
    if (tid[0] == '.' || tid == self) continue;
    std::ifstream comm("/proc/self/task/" + tid + "/comm");
    std::string name;
    std::getline(comm, name);
    ++by_name[name.empty() ? "?" : name];
    ++others;
  }
  ::closedir(dir);
  std::string out = std::to_string(others) + " more thread" + (others == 1 ? "" : "s") + ":";
  for (const auto& [name, count] : by_name) out += " " + name + " (" + std::to_string(count) + ")";
  return out;
}

}  // namespace distmetrics::runtime
