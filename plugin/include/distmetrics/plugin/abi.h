/* The plugin ABI: what a shared library must export to be a distmetrics plugin, in plain C.
 *
 * A plugin exports ONE symbol, `distmetrics_plugin_entry`, a function that takes nothing and
 * returns a pointer to a static `distmetrics_plugin_info`. It also carries, as one string
 * literal somewhere in its read-only data, its BUILD RECORD:
 *
 *   "distmetrics-plugin-build;interface=2;torch=1.13.0;cxx11_abi=1;distmetrics=0.1.0;compiler=GCC 12.2.0;"
 *
 * distmetrics reads the build record from the file BEFORE loading it, so a plugin built for
 * another plugin interface or another LibTorch is refused with a message, never loaded (loading
 * it could pull a second LibTorch into the process). After loading, the same facts are checked
 * again from the info struct. plugin.h writes both for you (DISTMETRICS_PLUGIN); write them by
 * hand only to test distmetrics' refusals.
 *
 * Frozen forever: the symbol name, the build record's prefix and key=value;... form, and the
 * first five fields of distmetrics_plugin_info (up to and including build_record), so that any
 * distmetrics can tell any plugin what it expected and what it found.
 *
 * DISTMETRICS_PLUGIN_INTERFACE_VERSION changes whenever a header a plugin compiles against
 * changes incompatibly: plugin/plugin.h, metrics/metric.h, value.h, batch.h, registry.h
 * (MetricSpec, ParamSpec), errors.h, stateful_metric.h (pack_states), runtime/comm.h, or the fields after build_record below.
 *   1: the first interface.
 *   2: metrics::Metric gained save_state/load_state/can_merge_state/merge_state (virtual, so its
 *      vtable changed): a plugin built for 1 would be called through the wrong slots.
 */
#ifndef DISTMETRICS_PLUGIN_ABI_H
#define DISTMETRICS_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#define DISTMETRICS_PLUGIN_INTERFACE_VERSION 2
#define DISTMETRICS_PLUGIN_ENTRY_SYMBOL "distmetrics_plugin_entry"
#define DISTMETRICS_PLUGIN_MAGIC 0x4c504d44u /* "DMPL" */
#define DISTMETRICS_PLUGIN_BUILD_RECORD_PREFIX "distmetrics-plugin-build;"

#if defined(_WIN32)
#define DISTMETRICS_PLUGIN_EXPORT __declspec(dllexport)
#else
#define DISTMETRICS_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct distmetrics_plugin_info {
  /* --- frozen --- */
  uint32_t magic;             /* DISTMETRICS_PLUGIN_MAGIC */
  uint32_t interface_version; /* DISTMETRICS_PLUGIN_INTERFACE_VERSION of the plugin's headers */
  uint32_t info_size;         /* sizeof(distmetrics_plugin_info) as the plugin saw it */
  uint32_t reserved;          /* 0 */
  const char* build_record;   /* the build record (see above), NUL-terminated */
  /* --- interface 1 and later --- */
  const char* name;           /* the plugin's name, e.g. "acme_metrics" */
  const char* version;        /* the plugin's own version, e.g. "1.2.0" */
  /* Adds the plugin's metrics to `registry`, a distmetrics::metrics::MetricRegistry*. Returns 0,
   * or nonzero with a NUL-terminated message in error[0, error_size). Called once per process,
   * only after every check above passed. */
  int (*register_metrics)(void* registry, char* error, size_t error_size);
} distmetrics_plugin_info;

typedef const distmetrics_plugin_info* (*distmetrics_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* DISTMETRICS_PLUGIN_ABI_H */
