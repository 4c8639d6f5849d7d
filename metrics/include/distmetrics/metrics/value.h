// Value: what compute() returns. A scalar, a tensor, or named values (e.g. per-class results
// together with their average); a Python metric's value may also nest lists (a list of
// per-class dicts) and hold leaves no comparison understands (a string, an object), kept as
// their type and text so that a property can say what it could not compare. Values have a JSON
// form that reports and the supervisor use.
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <utility>
#include <vector>

namespace distmetrics::metrics {

class Value {
 public:
  enum class Kind { None, Scalar, Tensor, Named, List, Uncomparable };
  using Entries = std::vector<std::pair<std::string, Value>>;

  Value() = default;
  Value(double scalar);         // NOLINT(google-explicit-constructor): metrics return numbers
  Value(const at::Tensor& t);   // NOLINT: stored detached, contiguous, on the CPU
  static Value named(Entries entries);
  static Value list(std::vector<Value> items);
  // `type`: the leaf's type name ("str"); `text`: a short rendering of it.
  static Value uncomparable(std::string type, std::string text);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  double scalar() const;               // throws std::logic_error if not a scalar
  const at::Tensor& tensor() const;    // throws if not a tensor
  const Entries& entries() const;      // throws if not named
  const Value& at(const std::string& name) const;  // throws std::out_of_range naming the key
  const std::vector<Value>& items() const;        // throws if not a list
  const std::string& uncomparable_type() const;  // throws if not uncomparable

  // JSON: a scalar is a number (NaN and infinities as the strings "nan", "inf", "-inf");
  // a tensor is {"dtype": "float64", "shape": [..], "values": [..flat, row-major..]};
  // named values are a JSON object (keys sorted, as JSON objects are unordered); a list is a
  // JSON array; an uncomparable leaf is {"uncomparable": type, "text": text}.
  nlohmann::json to_json() const;
  static Value from_json(const nlohmann::json& j);
  std::string to_string() const;  // compact, for messages

 private:
  Kind kind_ = Kind::None;
  double scalar_ = 0.0;
  at::Tensor tensor_;
  Entries entries_;
  std::vector<Value> items_;
  std::string type_, text_;  // an uncomparable leaf's
};

}  // namespace distmetrics::metrics
