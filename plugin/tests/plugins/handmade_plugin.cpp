// A plugin written by hand against abi.h alone (no LibTorch code): each build of this file, with
// one of the defines below, is a plugin that distmetrics must refuse, with its own message.
//   HANDMADE_INTERFACE=N        the interface in the build record and the info struct
//   HANDMADE_STRUCT_INTERFACE=N the interface in the info struct only (the record says the current one)
//   HANDMADE_TORCH="x.y.z"      the LibTorch in the build record (default: the real one)
//   HANDMADE_CXX11_ABI="0"      the C++ ABI in the build record
//   HANDMADE_NO_ENTRY           a build record, but no exported entry point
//   HANDMADE_REGISTRATION_FAILS registration reports an error
//   (none of the above)         registration succeeds and registers nothing
#include <torch/version.h>

#include <cstdio>

#include "distmetrics/plugin/abi.h"

#define HANDMADE_STR_(x) #x
#define HANDMADE_STR(x) HANDMADE_STR_(x)

#ifndef HANDMADE_INTERFACE
#define HANDMADE_INTERFACE DISTMETRICS_PLUGIN_INTERFACE_VERSION
#endif
#ifndef HANDMADE_STRUCT_INTERFACE
#define HANDMADE_STRUCT_INTERFACE HANDMADE_INTERFACE
#endif
#ifndef HANDMADE_TORCH
#define HANDMADE_TORCH TORCH_VERSION
#endif
#ifndef HANDMADE_CXX11_ABI
#define HANDMADE_CXX11_ABI HANDMADE_STR(_GLIBCXX_USE_CXX11_ABI)
#endif

static const char kRecord[] = DISTMETRICS_PLUGIN_BUILD_RECORD_PREFIX "interface=" HANDMADE_STR(HANDMADE_INTERFACE)
    ";torch=" HANDMADE_TORCH ";cxx11_abi=" HANDMADE_CXX11_ABI ";distmetrics=9.9.9;compiler=handmade;";

static int register_metrics(void*, char* error, size_t error_size) {
#ifdef HANDMADE_REGISTRATION_FAILS
  std::snprintf(error, error_size, "%s", "the handmade plugin refuses to register anything");
  return 1;
#else
  (void)error;
  (void)error_size;
  return 0;
#endif
}

#ifdef HANDMADE_NO_ENTRY
// Keeps the record in the library although nothing exports it.
extern "C" __attribute__((visibility("default"))) const char* handmade_record() { return kRecord; }
#else
extern "C" DISTMETRICS_PLUGIN_EXPORT const distmetrics_plugin_info* distmetrics_plugin_entry(void) {
  static const distmetrics_plugin_info info = {DISTMETRICS_PLUGIN_MAGIC, HANDMADE_STRUCT_INTERFACE,
                                               sizeof(distmetrics_plugin_info), 0u, kRecord, "handmade", "0.0.1",
                                               &register_metrics};
  return &info;
}
#endif
