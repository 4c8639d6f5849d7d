#include "modules.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <string>

#include "distmetrics/runtime/errors.h"

namespace distmetrics::runtime::detail {
namespace {

// The folder of libdistmetrics_runtime.so: the modules are built and installed beside it.
std::string runtime_folder() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&runtime_module_entry), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string path = info.dli_fname;
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

}  // namespace

void* runtime_module_entry(const char* file, const char* entry) {
  static std::mutex mutex;
  static std::map<std::string, void*> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string path = runtime_folder() + file;
  void*& handle = loaded[path];
  if (handle == nullptr) {
    // RTLD_NOW: a module that does not fit this runtime says so here, not at its first call.
    handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      throw ConfigError("cannot load " + path + ": " + (why ? why : "unknown error") +
                        " (a module of the runtime, built and installed beside libdistmetrics_runtime.so)");
    }
  }
  void* symbol = ::dlsym(handle, entry);
  if (symbol == nullptr) throw ConfigError(path + " has no entry point " + entry + " (built from other sources?)");
  return symbol;
}

}  // namespace distmetrics::runtime::detail
