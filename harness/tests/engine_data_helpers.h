// What the data tests share (engine_basics_test.cpp, engine_data_lazy_test.cpp): a generator's
// spec in one call, and a byte hash that pins generated data.
#pragma once

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "distmetrics/harness/data.h"

namespace distmetrics::harness::testing_data {

inline DataSpec spec(const std::string& generator, nlohmann::json params, std::int64_t n,
                     std::string dtype = "float32", std::uint64_t seed = 7) {
  DataSpec s;
  s.generator = generator;
  s.params = resolve_generator_params(generator, params);
  s.seed = seed;
  s.num_samples = n;
  s.dtype = dtype;
  return s;
}

// FNV-1a over a tensor's bytes: pins generated data to the byte.
inline std::uint64_t fnv(const at::Tensor& t, std::uint64_t h = 1469598103934665603ULL) {
  if (!t.defined()) return h;
  auto c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  for (std::size_t i = 0; i < c.nbytes(); ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

}  // namespace distmetrics::harness::testing_data
