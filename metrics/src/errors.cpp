#include "distmetrics/metrics/errors.h"

namespace distmetrics::metrics {

InputError::InputError(const std::string& metric, const std::string& argument, const std::string& expected,
                       const std::string& got)
    : std::invalid_argument(metric + ": " + argument + ": expected " + expected + ", got " + got),
      metric_(metric),
      argument_(argument) {}

NotComputableError::NotComputableError(const std::string& metric, const std::string& why)
    : std::runtime_error(metric + ": cannot compute: " + why) {}

}  // namespace distmetrics::metrics
