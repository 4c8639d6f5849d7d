// The local rank pools the runtime's pool tests run on: one per backend compiled here whose
// collectives run on the CPU, started the way the backend table says (Backend::pool_launch).
#pragma once

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "distmetrics/runtime/backends.h"

namespace distmetrics::runtime::testing_support {

struct PoolKind {
  std::string backend;
  std::string launch;  // PoolOptions::launch: "direct" or "mpirun"
};

inline void PrintTo(const PoolKind& kind, std::ostream* out) { *out << kind.backend << " (" << kind.launch << ")"; }

inline std::vector<PoolKind> local_pool_kinds() {
  std::vector<PoolKind> kinds;
  for (const auto& name : compiled_backends()) {
    const Backend* backend = find_backend(name);
    const auto& devices = backend->comm_devices;
    if (std::find(devices.begin(), devices.end(), "cpu") == devices.end()) continue;
    kinds.push_back({name, backend->pool_launch});
  }
  return kinds;
}

}  // namespace distmetrics::runtime::testing_support
