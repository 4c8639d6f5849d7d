// Errors raised by metrics. Messages name the metric, the argument, what was expected and what came.
#pragma once

#include <stdexcept>
#include <string>

namespace distmetrics::metrics {

// Bad input to update() or a bad constructor parameter.
class InputError : public std::invalid_argument {
 public:
  InputError(const std::string& metric, const std::string& argument, const std::string& expected,
             const std::string& got);
  const std::string& metric() const { return metric_; }
  const std::string& argument() const { return argument_; }

 private:
  std::string metric_;
  std::string argument_;
};

// compute() with no samples on any rank. Raised on every rank together (decided from synced counts).
class NotComputableError : public std::runtime_error {
 public:
  NotComputableError(const std::string& metric, const std::string& why);
};

}  // namespace distmetrics::metrics
