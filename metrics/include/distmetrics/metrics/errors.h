// Errors raised by metrics. Messages name the metric, the argument, what was expected and what came.
#pragma once

#include <stdexcept>
#include <string>

#include "distmetrics/runtime/params.h"

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

// A metric's parameters (from a scenario file or a plugin) that do not fit its ParamSpecs: an
// unknown metric or parameter name (with the close names suggested), a wrong type, a value
// outside the choices, a required parameter missing. `field` is empty for an unknown metric.
class ParamError : public std::invalid_argument {
 public:
  ParamError(const std::string& metric, const std::string& field, const std::string& message);
  // A problem the runtime's parameter resolver found (runtime::FieldError), its message as is.
  ParamError(const std::string& metric, const runtime::FieldError& error);
  const std::string& metric() const { return metric_; }
  const std::string& field() const { return field_; }

 private:
  std::string metric_;
  std::string field_;
};

// The ranks disagree on something compute() needs them to agree on (e.g. RunningAverage's
// number of update() calls). Decided from synced values, so raised on every rank together.
class SyncError : public std::runtime_error {
 public:
  SyncError(const std::string& metric, const std::string& what_differs);
};

}  // namespace distmetrics::metrics
