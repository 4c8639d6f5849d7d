#include "distmetrics/plugin/loader.h"

#include <dlfcn.h>
#include <torch/version.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "distmetrics/build_config.h"
#include "distmetrics/plugin/abi.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::plugin {
namespace {

namespace fs = std::filesystem;

#define DM_STRINGIFY_(x) #x
#define DM_STRINGIFY(x) DM_STRINGIFY_(x)
#if defined(_GLIBCXX_USE_CXX11_ABI)
constexpr const char* kHostCxx11Abi = DM_STRINGIFY(_GLIBCXX_USE_CXX11_ABI);
#else
constexpr const char* kHostCxx11Abi = "none";
#endif

constexpr std::size_t kMaxRecord = 1024;  // a longer "record" is something else
const std::string kPrefix = DISTMETRICS_PLUGIN_BUILD_RECORD_PREFIX;

using runtime::first_line;

// Searches the file for the build record (the prefix up to the next NUL), chunk by chunk; also
// tells whether the entry point's name appears (it does in the dynamic symbol table of a
// library that exports it).
struct Scan {
  std::optional<std::string> record;
  bool names_entry = false;
};

Scan scan_file(std::ifstream& in) {
  Scan scan;
  const std::string entry = DISTMETRICS_PLUGIN_ENTRY_SYMBOL;
  const std::size_t keep = std::max(kPrefix.size() + kMaxRecord, entry.size());
  std::string window;
  std::vector<char> chunk(1 << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    window.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    if (!scan.names_entry && window.find(entry + '\0') != std::string::npos) scan.names_entry = true;
    if (!scan.record) {
      const auto at = window.find(kPrefix);
      if (at != std::string::npos) {
        const auto end = window.find('\0', at);
        if (end != std::string::npos) {
          scan.record = window.substr(at, end - at);
        } else if (window.size() - at > kPrefix.size() + kMaxRecord || !in) {
          scan.record = window.substr(at, kPrefix.size() + kMaxRecord);  // unterminated: parse rejects it
        }
      }
    }
    if (scan.record && scan.names_entry) break;
    if (window.size() > keep) window.erase(0, window.size() - keep);
  }
  return scan;
}

std::string rebuild_hint() {
  return "Rebuild the plugin against this installation: find_package(distmetrics) from its prefix "
         "(which finds LibTorch " TORCH_VERSION ") and distmetrics_add_plugin().";
}

std::string dlopen_hint(const std::string& error) {
  if (error.find("undefined symbol") != std::string::npos)
    return "It needs a symbol this process does not have: it was probably built against another distmetrics or "
           "LibTorch than this one (" DISTMETRICS_VERSION ", LibTorch " TORCH_VERSION "). " + rebuild_hint();
  if (error.find("cannot open shared object file") != std::string::npos)
    return "A library it links against cannot be found: check `ldd` on it and its RUNPATH.";
  return "Check that it is a shared library for this machine (`file`, `ldd`).";
}

using Plugins = std::map<std::string, std::unique_ptr<Plugin>>;

Plugins& loaded_plugins() {
  static Plugins plugins;
  return plugins;
}

std::mutex& load_mutex() {
  static std::mutex m;
  return m;
}

std::unique_ptr<Plugin> load_checked(const std::string& path) {
  const BuildRecord record = read_build_record(path);
  if (auto refusal = check_compatible(record, path)) throw *refusal;

  // RTLD_NOW: a symbol this process lacks is an error here, not a crash later. RTLD_LOCAL: two
  // plugins may define the same internal names.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* error = ::dlerror();
    const std::string text = error ? error : "unknown error";
    throw PluginError(PluginErrorKind::LoadFailed,
                      "plugin " + path + ": the dynamic loader refused it: " + text + ". " + dlopen_hint(text));
  }
  // Never dlclose: registered metrics keep pointers into its code.
  ::dlerror();
  void* symbol = ::dlsym(handle, DISTMETRICS_PLUGIN_ENTRY_SYMBOL);
  if (!symbol) {
    throw PluginError(PluginErrorKind::NotPlugin,
                      "plugin " + path + " carries a build record but exports no `" DISTMETRICS_PLUGIN_ENTRY_SYMBOL
                      "` function (is it hidden, or is DISTMETRICS_PLUGIN missing from its sources?). A plugin "
                      "defines it with DISTMETRICS_PLUGIN(name, version) from <distmetrics/plugin/plugin.h>.");
  }
  const auto entry = reinterpret_cast<distmetrics_plugin_entry_fn>(symbol);
  const distmetrics_plugin_info* info = entry();
  if (!info) {
    throw PluginError(PluginErrorKind::NotPlugin, "plugin " + path + ": `" DISTMETRICS_PLUGIN_ENTRY_SYMBOL
                                                  "` returned no plugin info (a null pointer)");
  }
  if (info->magic != DISTMETRICS_PLUGIN_MAGIC) {
    std::ostringstream msg;
    msg << "plugin " << path << ": `" DISTMETRICS_PLUGIN_ENTRY_SYMBOL "` returned something that is not a "
        << "distmetrics_plugin_info (magic 0x" << std::hex << info->magic << ", expected 0x"
        << DISTMETRICS_PLUGIN_MAGIC << ")";
    throw PluginError(PluginErrorKind::NotPlugin, msg.str());
  }
  // The entry point's own account must agree with the record read from the file.
  BuildRecord from_entry = record;
  if (info->build_record) {
    if (auto parsed = BuildRecord::parse(info->build_record)) from_entry = *parsed;
  }
  from_entry.interface_version = static_cast<int>(info->interface_version);
  if (auto refusal = check_compatible(from_entry, path)) throw *refusal;
  if (info->info_size < sizeof(distmetrics_plugin_info) || !info->register_metrics) {
    throw PluginError(PluginErrorKind::NotPlugin,
                      "plugin " + path + ": its distmetrics_plugin_info is incomplete (" +
                          std::to_string(info->info_size) + " bytes, expected " +
                          std::to_string(sizeof(distmetrics_plugin_info)) + ", with a register_metrics function)");
  }

  auto plugin = std::make_unique<Plugin>();
  plugin->path = path;
  plugin->name = info->name ? info->name : fs::path(path).stem().string();
  plugin->version = info->version ? info->version : "";
  plugin->build = from_entry;
  char error[2048] = {0};
  if (info->register_metrics(&plugin->registry, error, sizeof(error)) != 0) {
    error[sizeof(error) - 1] = '\0';
    throw PluginError(PluginErrorKind::RegistrationFailed,
                      "plugin " + path + " (" + plugin->name + "): registering its metrics failed: " +
                          (error[0] ? std::string(error) : std::string("no message")));
  }
  if (plugin->registry.names().empty()) {
    throw PluginError(PluginErrorKind::RegistrationFailed,
                      "plugin " + path + " (" + plugin->name +
                          ") registered no metric: its DISTMETRICS_PLUGIN block must call registry.add(...)");
  }
  return plugin;
}

}  // namespace

const char* to_string(PluginErrorKind kind) {
  switch (kind) {
    case PluginErrorKind::Missing: return "missing";
    case PluginErrorKind::NotSharedLibrary: return "not a shared library";
    case PluginErrorKind::NotPlugin: return "not a plugin";
    case PluginErrorKind::WrongInterface: return "wrong plugin interface";
    case PluginErrorKind::WrongTorch: return "wrong LibTorch";
    case PluginErrorKind::WrongCxxAbi: return "wrong C++ ABI";
    case PluginErrorKind::LoadFailed: return "load failed";
    case PluginErrorKind::RegistrationFailed: return "registration failed";
  }
  return "?";
}

std::optional<BuildRecord> BuildRecord::parse(const std::string& text) {
  if (text.rfind(kPrefix, 0) != 0 || text.size() > kPrefix.size() + kMaxRecord) return std::nullopt;
  BuildRecord r;
  r.text = text;
  std::istringstream fields(text.substr(kPrefix.size()));
  bool has_interface = false;
  for (std::string field; std::getline(fields, field, ';');) {
    const auto eq = field.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = field.substr(0, eq), value = field.substr(eq + 1);
    if (key == "interface") {
      try {
        std::size_t used = 0;
        r.interface_version = std::stoi(value, &used);
        has_interface = used == value.size();
      } catch (const std::exception&) {
        return std::nullopt;
      }
    } else if (key == "torch") {
      r.torch_version = value;
    } else if (key == "cxx11_abi") {
      r.cxx11_abi = value;
    } else if (key == "distmetrics") {
      r.distmetrics_version = value;
    } else if (key == "compiler") {
      r.compiler = value;
    }
  }
  if (!has_interface) return std::nullopt;
  return r;
}

BuildRecord host_build_record() {
  BuildRecord r;
  r.interface_version = DISTMETRICS_PLUGIN_INTERFACE_VERSION;
  r.torch_version = TORCH_VERSION;
  r.cxx11_abi = kHostCxx11Abi;
  r.distmetrics_version = DISTMETRICS_VERSION;
  return r;
}

BuildRecord read_build_record(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    throw PluginError(PluginErrorKind::Missing,
                      "plugin " + path + ": no such file (give the path of the plugin's shared library, e.g. "
                                         "build/libacme_metrics.so)");
  }
  if (fs::is_directory(status)) {
    throw PluginError(PluginErrorKind::NotSharedLibrary,
                      "plugin " + path + " is a folder, not a shared library: give the path of the .so file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw PluginError(PluginErrorKind::Missing, "plugin " + path + ": cannot be opened for reading");
  char magic[4] = {0, 0, 0, 0};
  in.read(magic, 4);
  if (in.gcount() != 4 || std::memcmp(magic, "\x7f" "ELF", 4) != 0) {
    throw PluginError(PluginErrorKind::NotSharedLibrary,
                      "plugin " + path + " is not a shared library (it does not start with the ELF magic number): "
                                         "give the .so that building the plugin produced");
  }
  in.seekg(0);
  const Scan scan = scan_file(in);
  if (!scan.record) {
    throw PluginError(PluginErrorKind::NotPlugin,
                      "plugin " + path + " is a shared library but not a distmetrics plugin: it carries no build record" +
                          (scan.names_entry ? std::string(" (it names `" DISTMETRICS_PLUGIN_ENTRY_SYMBOL
                                                           "`, but was not built with DISTMETRICS_PLUGIN)")
                                            : std::string(" and exports no `" DISTMETRICS_PLUGIN_ENTRY_SYMBOL "`")) +
                          ". A plugin defines its entry point with DISTMETRICS_PLUGIN(name, version) from "
                          "<distmetrics/plugin/plugin.h>; it was not loaded.");
  }
  auto record = BuildRecord::parse(*scan.record);
  if (!record) {
    throw PluginError(PluginErrorKind::NotPlugin, "plugin " + path + ": its build record is malformed: \"" +
                                                      first_line(scan.record->substr(0, 200)) +
                                                      "\" (expected " + kPrefix + "interface=N;torch=X.Y.Z;...)");
  }
  return *record;
}

std::optional<PluginError> check_compatible(const BuildRecord& plugin, const std::string& path) {
  const BuildRecord host = host_build_record();
  if (plugin.interface_version != host.interface_version) {
    const std::string found = std::to_string(plugin.interface_version), expected = std::to_string(host.interface_version);
    const std::string headers = plugin.distmetrics_version.empty() ? "" : ", the plugin's headers " + plugin.distmetrics_version;
    return PluginError(PluginErrorKind::WrongInterface,
                       "plugin " + path + " was built for plugin interface " + found + ", this distmetrics loads interface " +
                           expected + ": rebuild it against this version's headers (this distmetrics is " + host.distmetrics_version +
                           headers + "): expected interface " + expected + ", found " + found + ". It was not loaded. " +
                           rebuild_hint());
  }
  if (plugin.torch_version != host.torch_version) {
    return PluginError(PluginErrorKind::WrongTorch,
                       "plugin " + path + " was built against LibTorch " +
                           (plugin.torch_version.empty() ? "(unknown)" : plugin.torch_version) +
                           ", but this distmetrics runs on LibTorch " + host.torch_version + ": expected LibTorch " +
                           host.torch_version + ", found " + plugin.torch_version +
                           " (LibTorch has no stable C++ ABI across versions). It was not loaded. " + rebuild_hint());
  }
  if (plugin.cxx11_abi != host.cxx11_abi) {
    return PluginError(PluginErrorKind::WrongCxxAbi,
                       "plugin " + path + " was compiled with _GLIBCXX_USE_CXX11_ABI=" + plugin.cxx11_abi +
                           ", but this distmetrics with _GLIBCXX_USE_CXX11_ABI=" + host.cxx11_abi + ": expected " +
                           host.cxx11_abi + ", found " + plugin.cxx11_abi +
                           " (std::string and friends differ between the two). It was not loaded. Build it with "
                           "LibTorch's compile flags (TORCH_CXX_FLAGS), as distmetrics_add_plugin() does.");
  }
  return std::nullopt;
}

std::string Plugin::describe() const {
  std::string out = name;
  if (!version.empty()) out += " " + version;
  if (build.interface_version < 0 && !build.text.empty()) return out + " (" + build.text + ")";  // not a shared library
  out += " (interface " + std::to_string(build.interface_version) + ", LibTorch " + build.torch_version;
  if (!build.compiler.empty()) out += ", " + build.compiler;
  return out + ")";
}

namespace {
std::string plugin_key(const std::string& path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) absolute = path;
  return absolute.lexically_normal().string();
}
}  // namespace

const Plugin* find_loaded_plugin(const std::string& path) {
  const std::string key = plugin_key(path);
  std::lock_guard<std::mutex> lock(load_mutex());
  auto& plugins = loaded_plugins();
  auto it = plugins.find(key);
  return it == plugins.end() ? nullptr : it->second.get();
}

const Plugin& load_plugin(const std::string& path) {
  const std::string key = plugin_key(path);
  std::lock_guard<std::mutex> lock(load_mutex());
  auto& plugins = loaded_plugins();
  auto it = plugins.find(key);
  if (it == plugins.end()) it = plugins.emplace(key, load_checked(key)).first;
  return *it->second;
}

}  // namespace distmetrics::plugin
