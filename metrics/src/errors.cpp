#include "distmetrics/metrics/errors.h"

namespace distmetrics::metrics {

InputError::InputError(const std::string& metric, const std::string& argument, const std::string& expected,
                       const std::string& got)
    : std::invalid_argument(metric + ": " + argument + ": expected " + expected + ", got " + got),
      metric_(metric),
      argument_(argument) {}

NotComputableError::NotComputableError(const std::string& metric, const std::string& why)
    : std::runtime_error(metric + ": cannot compute: " + why) {}

ParamError::ParamError(const std::string& metric, const std::string& field, const std::string& message)
    : std::invalid_argument(field.empty() ? message : metric + ": parameter \"" + field + "\": " + message),
      metric_(metric),
      field_(field) {}

ParamError::ParamError(const std::string& metric, const runtime::FieldError& error)
    : std::invalid_argument(error.what()), metric_(metric), field_(error.field()) {}

SyncError::SyncError(const std::string& metric, const std::string& what_differs)
    : std::runtime_error(metric + ": the ranks disagree: " + what_differs) {}

}  // namespace distmetrics::metrics
