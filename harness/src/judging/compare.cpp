#include "distmetrics/harness/compare.h"
#include "distmetrics/harness/number_text.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

namespace distmetrics::harness {
namespace {

using nlohmann::json;
constexpr double kInf = std::numeric_limits<double>::infinity();

bool is_number_like(const json& v) {
  if (v.is_number()) return true;
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    return s == "nan" || s == "inf" || s == "-inf";
  }
  return false;
}

double number(const json& v) {
  if (v.is_number()) return v.get<double>();
  const auto& s = v.get_ref<const std::string&>();
  if (s == "nan") return std::nan("");
  return s == "inf" ? kInf : -kInf;
}

bool is_tensor(const json& v) { return v.is_object() && v.contains("dtype") && v.contains("shape") && v.contains("values"); }

bool integral_dtype(const json& tensor) {
  const auto& d = tensor.at("dtype").get_ref<const std::string&>();
  return d == "int64" || d == "int32" || d == "bool";
}

// Ten significant digits, so that a difference in the seventh digit still shows.
constexpr int kValueDigits = 10;

// One pair of numbers: updates `result`; `where` names the position for the detail.
void compare_numbers(double expected, double actual, bool exact, const Tolerance& tol, const std::string& where,
                     Comparison& result) {
  bool equal;
  double diff;
  if (std::isnan(expected) || std::isnan(actual)) {
    equal = std::isnan(expected) && std::isnan(actual);
    diff = equal ? 0.0 : kInf;
  } else if (std::isinf(expected) || std::isinf(actual)) {
    equal = expected == actual;
    diff = equal ? 0.0 : kInf;
  } else {
    diff = std::fabs(expected - actual);
    equal = exact ? expected == actual : diff <= tol.atol + tol.rtol * std::fabs(expected);
  }
  result.difference = std::max(result.difference, diff);
  if (!equal && result.equal) {
    result.equal = false;
    result.detail = (where.empty() ? "" : where + ": ") + number_text(actual, kValueDigits) + " vs expected " + number_text(expected, kValueDigits) +
                    (exact ? " (compared exactly)" : "");
  }
}

void mismatch(Comparison& result, const std::string& what) {
  result.difference = kInf;
  if (result.equal) {
    result.equal = false;
    result.detail = what;
  }
}

bool is_uncomparable(const json& v) {
  return v.is_object() && v.size() == 2 && v.contains("uncomparable") && v.contains("text") && v.at("uncomparable").is_string();
}

// `where` is the path of the value inside the result: "" at the top, then "map_per_class[3]",
// "per_class.recall" (dict keys joined with '.', list indices and tensor elements in brackets).
void compare_into(const json& expected, const json& actual, const Tolerance& tol, bool exact, const std::string& where,
                  Comparison& result) {
  const std::string prefix = where.empty() ? "" : where + ": ";
  if (is_uncomparable(expected) || is_uncomparable(actual)) {
    const json& leaf = is_uncomparable(actual) ? actual : expected;
    mismatch(result, "cannot compare a " + leaf.at("uncomparable").get<std::string>() + " at " +
                         (where.empty() ? "the top level" : where) + " (" + leaf.value("text", "") +
                         "): a result is compared as numbers, tensors, and dicts, lists and tuples of them");
    return;
  }
  if (expected.is_null() && actual.is_null()) return;  // None in both
  if (is_number_like(expected) && is_number_like(actual)) {
    compare_numbers(number(expected), number(actual), exact, tol, where, result);
    return;
  }
  if (is_tensor(expected) && is_tensor(actual)) {
    if (expected.at("shape") != actual.at("shape")) {
      mismatch(result, prefix + "shape " + actual.at("shape").dump() + " vs expected " + expected.at("shape").dump());
      return;
    }
    const bool both_integral = integral_dtype(expected) && integral_dtype(actual);
    const auto& e = expected.at("values");
    const auto& a = actual.at("values");
    for (std::size_t i = 0; i < e.size() && i < a.size(); ++i) {
      if (!is_number_like(e[i]) || !is_number_like(a[i])) {
        // Booleans (bool tensors) compare as 0/1.
        const double ev = e[i].is_boolean() ? e[i].get<bool>() : is_number_like(e[i]) ? number(e[i]) : NAN;
        const double av = a[i].is_boolean() ? a[i].get<bool>() : is_number_like(a[i]) ? number(a[i]) : NAN;
        compare_numbers(ev, av, true, tol, where + "[" + std::to_string(i) + "]", result);
        continue;
      }
      compare_numbers(number(e[i]), number(a[i]), exact || both_integral, tol,
                      where + "[" + std::to_string(i) + "]", result);
    }
    if (e.size() != a.size()) mismatch(result, prefix + "different number of elements");
    return;
  }
  if (expected.is_array() && actual.is_array()) {  // a list or tuple (of a Python metric's result)
    if (expected.size() != actual.size()) {
      mismatch(result, prefix + "a list of " + std::to_string(actual.size()) + " items vs expected " +
                           std::to_string(expected.size()));
      return;
    }
    for (std::size_t i = 0; i < expected.size(); ++i)
      compare_into(expected[i], actual[i], tol, exact, where + "[" + std::to_string(i) + "]", result);
    return;
  }
  if (expected.is_object() && actual.is_object() && !is_tensor(expected) && !is_tensor(actual)) {
    for (const auto& [key, value] : expected.items()) {
      const std::string entry = where.empty() ? key : where + "." + key;
      if (!actual.contains(key)) {
        mismatch(result, "entry '" + entry + "' is missing");
        continue;
      }
      const bool entry_exact =
          exact || std::find(tol.exact.begin(), tol.exact.end(), key) != tol.exact.end();
      compare_into(value, actual.at(key), tol, entry_exact, entry, result);
    }
    for (const auto& [key, value] : actual.items())
      if (!expected.contains(key)) mismatch(result, "unexpected entry '" + (where.empty() ? key : where + "." + key) + "'");
    return;
  }
  mismatch(result, prefix + "a different kind of value: " + value_text(actual) + " vs expected " + value_text(expected));
}

}  // namespace

Comparison compare_values(const json& expected, const json& actual, const Tolerance& tolerance) {
  Comparison result;
  compare_into(expected, actual, tolerance, false, "", result);
  return result;
}

std::string value_text(const json& value) {
  if (is_number_like(value)) return number_text(number(value), kValueDigits);
  if (is_tensor(value)) {
    std::ostringstream out;
    out << "tensor " << value.at("dtype").get<std::string>() << " " << value.at("shape").dump() << " [";
    const auto& v = value.at("values");
    const std::size_t shown = std::min<std::size_t>(v.size(), 8);
    for (std::size_t i = 0; i < shown; ++i)
      out << (i ? ", " : "") << (is_number_like(v[i]) ? number_text(number(v[i]), kValueDigits) : v[i].dump());
    if (v.size() > shown) out << ", ... (" << v.size() << " values)";
    out << "]";
    return out.str();
  }
  if (value.is_object() && !is_uncomparable(value)) {
    std::ostringstream out;
    out << "{";
    bool first = true;
    for (const auto& [key, entry] : value.items()) {
      out << (first ? "" : ", ") << key << ": " << value_text(entry);
      first = false;
    }
    out << "}";
    return out.str();
  }
  if (value.is_null()) return "none";
  if (is_uncomparable(value)) return value.value("text", "") + " (" + value.at("uncomparable").get<std::string>() + ")";
  if (value.is_array()) {
    std::ostringstream out;
    out << "[";
    const std::size_t shown = std::min<std::size_t>(value.size(), 8);
    for (std::size_t i = 0; i < shown; ++i) out << (i ? ", " : "") << value_text(value[i]);
    if (value.size() > shown) out << ", ... (" << value.size() << " items)";
    out << "]";
    return out.str();
  }
  return value.dump();
}

}  // namespace distmetrics::harness
