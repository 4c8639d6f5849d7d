// A digest of tensors, for Metric::state_digest(): equal iff the tensors are equal (dtype, shape
// and bytes). The harness compares a metric's digest before and after compute() to check that
// compute() leaves the local state untouched (the `idempotent` property).
//
//   std::string state_digest() const override { return distmetrics::plugin::tensor_digest({sum_, count_}); }
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>

namespace distmetrics::plugin {

inline std::string tensor_digest(std::initializer_list<at::Tensor> tensors) {
  std::uint64_t hash = 1469598103934665603ULL;  // FNV-1a, 64 bit
  auto add = [&hash](const void* data, std::size_t n) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) hash = (hash ^ bytes[i]) * 1099511628211ULL;
  };
  for (const auto& t : tensors) {
    if (!t.defined()) {
      add("undefined", 9);
      continue;
    }
    const at::Tensor cpu = t.detach().to(at::kCPU).contiguous();
    const auto type = static_cast<int>(cpu.scalar_type());
    add(&type, sizeof(type));
    const std::int64_t dims = cpu.dim();
    add(&dims, sizeof(dims));
    for (std::int64_t size : cpu.sizes()) add(&size, sizeof(size));
    add(cpu.data_ptr(), cpu.numel() * cpu.element_size());
  }
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(hash));
  return out;
}

}  // namespace distmetrics::plugin
