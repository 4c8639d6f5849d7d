// Errors raised by metrics. Messages name the metric, the argument, what was expected and what came.
#pragma once

#include <stdexcept>
#include <utility>
#include <string>

#include "distmetrics/runtime/params.h"
#include "distmetrics/runtime/text.h"

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

// An error raised by a metric implemented in another language (a Python metric's exception),
// with the type name it had there ("NotComputableError", "ValueError"), so that reports and
// expected-error checks see that name rather than this class's.
class ForeignError : public std::runtime_error, public runtime::NamesItsType {
 public:
  ForeignError(std::string type_name, const std::string& message)
      : std::runtime_error(message), type_name_(std::move(type_name)) {}
  const std::string& type_name() const override { return type_name_; }

 private:
  std::string type_name_;
};

}  // namespace distmetrics::metrics
