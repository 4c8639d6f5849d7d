// Numbers as text (number_text.h).
#include "distmetrics/harness/number_text.h"

#include <cmath>
#include <iomanip>
#include <sstream>

namespace distmetrics::harness {

std::string number_text(double value, int significant) {
  if (std::isnan(value)) return "nan";  // the stream would say "-nan" for a NaN with its sign bit set
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::ostringstream out;
  out << std::setprecision(significant) << value;
  return out.str();
}

std::string fixed_text(double value, int decimals) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(decimals) << value;
  return out.str();
}

std::string seconds_text(double seconds) { return number_text(seconds, seconds < 10 ? 2 : 3); }

}  // namespace distmetrics::harness
