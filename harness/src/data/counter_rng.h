// A counter-based random number generator: draw number `counter` of stream `stream` under `seed`
// is a pure function of the three, so every rank (and every run, on any LibTorch) produces the
// same data without sharing state. Built on the splitmix64 finalizer.
#pragma once

#include <cmath>
#include <cstdint>

namespace distmetrics::harness::detail {

inline std::uint64_t splitmix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

class CounterRng {
 public:
  CounterRng(std::uint64_t seed, std::uint64_t stream)
      : key_(splitmix64(seed ^ splitmix64(stream * 0x632BE59BD9B4E019ULL + 0x9E3779B97F4A7C15ULL))) {}

  std::uint64_t bits(std::uint64_t counter) const {
    return splitmix64(key_ + (counter + 1) * 0x9E3779B97F4A7C15ULL);
  }
  // Uniform on the open interval (0, 1): safe to take the logarithm of.
  double uniform(std::uint64_t counter) const {
    return (static_cast<double>(bits(counter) >> 11) + 0.5) * 0x1.0p-53;
  }
  // Standard normal (Box-Muller on draws 2c and 2c+1).
  double normal(std::uint64_t counter) const {
    const double u1 = uniform(2 * counter), u2 = uniform(2 * counter + 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Uniform integer in [0, n).
  std::uint64_t below(std::uint64_t counter, std::uint64_t n) const {
    return static_cast<std::uint64_t>(uniform(counter) * static_cast<double>(n)) % n;
  }

 private:
  std::uint64_t key_;
};

}  // namespace distmetrics::harness::detail
