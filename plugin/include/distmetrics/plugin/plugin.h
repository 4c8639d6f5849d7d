// Writing a distmetrics plugin: everything a third-party metric needs, and the one macro that
// makes a shared library a plugin.
//
//   #include <distmetrics/plugin/plugin.h>
//
//   class MyMae : public distmetrics::metrics::Metric { ... };   // reset, update, compute, ...
//
//   DISTMETRICS_PLUGIN("acme_metrics", "1.0.0") {
//     registry.add({"MeanAbsoluteError", "regression", "mean |input - target|", {},
//                   [](const nlohmann::json& params) { return std::make_unique<MyMae>(); }});
//   }
//
// A metric gets the communicator the harness built for its variant through set_communicator()
// (nullptr: single process) and syncs however it likes: through the communicator's collectives,
// or with its own c10d calls on the process group behind it (process_group.h). The harness
// judges behaviour only (docs/plugins.md). A metric may also override save_state/load_state
// (and can_merge_state/merge_state) to be checked by state_roundtrip and merge_state; the
// saved bytes are best metrics::pack_states() of its state tensors, as the reference metrics do.
// Build it with find_package(distmetrics) and distmetrics_add_plugin(), check it with
// `distmetrics conform --plugin lib<name>.so`.
#pragma once

#include <torch/version.h>  // TORCH_VERSION of the LibTorch this plugin is compiled against

#include <cstddef>
#include <cstdio>
#include <exception>

#include "distmetrics/build_config.h"  // DISTMETRICS_VERSION of these headers
#include "distmetrics/runtime/comm.h"
#include "distmetrics/metrics/batch.h"
#include "distmetrics/metrics/errors.h"
#include "distmetrics/metrics/metric.h"
#include "distmetrics/metrics/registry.h"
#include "distmetrics/metrics/stateful_metric.h"  // pack_states/unpack_states: the form save_state() gives
#include "distmetrics/metrics/value.h"
#include "distmetrics/plugin/abi.h"

#define DISTMETRICS_PLUGIN_STRINGIFY_(x) #x
#define DISTMETRICS_PLUGIN_STRINGIFY(x) DISTMETRICS_PLUGIN_STRINGIFY_(x)

#if defined(_GLIBCXX_USE_CXX11_ABI)
#define DISTMETRICS_PLUGIN_CXX11_ABI DISTMETRICS_PLUGIN_STRINGIFY(_GLIBCXX_USE_CXX11_ABI)
#else
#define DISTMETRICS_PLUGIN_CXX11_ABI "none"
#endif

// The version alone: __clang_version__ may carry a trailing space or the source repository.
#if defined(__clang__)
#define DISTMETRICS_PLUGIN_COMPILER                                                                 \
  "Clang " DISTMETRICS_PLUGIN_STRINGIFY(__clang_major__) "." DISTMETRICS_PLUGIN_STRINGIFY(         \
      __clang_minor__) "." DISTMETRICS_PLUGIN_STRINGIFY(__clang_patchlevel__)
#elif defined(__GNUC__)
#define DISTMETRICS_PLUGIN_COMPILER "GCC " __VERSION__
#else
#define DISTMETRICS_PLUGIN_COMPILER "unknown"
#endif

// The build record (abi.h) of the translation unit that expands it: the versions come from the
// headers this plugin is compiled against, not from the distmetrics that will load it.
#define DISTMETRICS_PLUGIN_BUILD_RECORD                                                                 \
  DISTMETRICS_PLUGIN_BUILD_RECORD_PREFIX "interface=" DISTMETRICS_PLUGIN_STRINGIFY(                    \
      DISTMETRICS_PLUGIN_INTERFACE_VERSION) ";torch=" TORCH_VERSION ";cxx11_abi=" DISTMETRICS_PLUGIN_CXX11_ABI \
                                            ";distmetrics=" DISTMETRICS_VERSION                        \
                                            ";compiler=" DISTMETRICS_PLUGIN_COMPILER ";"

namespace distmetrics::plugin::detail {

// Runs the plugin's registration; no exception crosses back into distmetrics.
inline int call_register(void (*register_fn)(metrics::MetricRegistry&), void* registry, char* error,
                         std::size_t error_size) noexcept {
  auto fail = [&](const char* what) {
    if (error && error_size) std::snprintf(error, error_size, "%s", what);
    return 1;
  };
  try {
    register_fn(*static_cast<metrics::MetricRegistry*>(registry));
    return 0;
  } catch (const std::exception& e) {
    return fail(e.what());
  } catch (...) {
    return fail("an exception that is not a std::exception");
  }
}

}  // namespace distmetrics::plugin::detail

// Defines the plugin's entry point; the block that follows registers its metrics into
// `registry` (a distmetrics::metrics::MetricRegistry&). Use it once per shared library.
// NAME and VERSION are string literals: the plugin's name and its own version.
#define DISTMETRICS_PLUGIN(NAME, VERSION)                                                                \
  static void distmetrics_plugin_register_metrics_(::distmetrics::metrics::MetricRegistry& registry);    \
  extern "C" DISTMETRICS_PLUGIN_EXPORT const distmetrics_plugin_info* distmetrics_plugin_entry(void) {   \
    static const distmetrics_plugin_info info = {                                                        \
        DISTMETRICS_PLUGIN_MAGIC,                                                                        \
        DISTMETRICS_PLUGIN_INTERFACE_VERSION,                                                            \
        static_cast<uint32_t>(sizeof(distmetrics_plugin_info)),                                          \
        0u,                                                                                              \
        DISTMETRICS_PLUGIN_BUILD_RECORD,                                                                 \
        NAME,                                                                                            \
        VERSION,                                                                                         \
        [](void* registry, char* error, size_t error_size) -> int {                                      \
          return ::distmetrics::plugin::detail::call_register(&distmetrics_plugin_register_metrics_,     \
                                                              registry, error, error_size);              \
        }};                                                                                              \
    return &info;                                                                                        \
  }                                                                                                      \
  static void distmetrics_plugin_register_metrics_(::distmetrics::metrics::MetricRegistry& registry)
