#include "distmetrics/metrics/value.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "distmetrics/runtime/comm.h"

namespace distmetrics::metrics {
namespace {

nlohmann::json number_to_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double number_from_json(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto s = j.get<std::string>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  throw std::invalid_argument("Value: expected a number or \"nan\"/\"inf\"/\"-inf\", got " + j.dump());
}

at::ScalarType dtype_from_name(const std::string& name) {
  if (name == "float64") return at::kDouble;
  if (name == "float32") return at::kFloat;
  if (name == "int64") return at::kLong;
  if (name == "int32") return at::kInt;
  if (name == "bool") return at::kBool;
  throw std::invalid_argument("Value: unknown dtype \"" + name + "\"");
}

}  // namespace

Value::Value(double scalar) : kind_(Kind::Scalar), scalar_(scalar) {}

Value::Value(const at::Tensor& t) : kind_(Kind::Tensor) {
  if (!t.defined()) throw std::invalid_argument("Value: undefined tensor");
  tensor_ = t.detach().to(at::kCPU).contiguous().clone();
  // Stored tensors use the dtypes the JSON form knows: floats as float64, integers as int64.
  if (at::isFloatingType(tensor_.scalar_type())) {
    tensor_ = tensor_.to(at::kDouble);
  } else if (tensor_.scalar_type() != at::kBool) {
    tensor_ = tensor_.to(at::kLong);
  }
}

Value Value::named(Entries entries) {
  Value v;
  v.kind_ = Kind::Named;
  v.entries_ = std::move(entries);
  return v;
}

Value Value::list(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::List;
  v.items_ = std::move(items);
  return v;
}

Value Value::uncomparable(std::string type, std::string text) {
  Value v;
  v.kind_ = Kind::Uncomparable;
  v.type_ = std::move(type);
  v.text_ = std::move(text);
  return v;
}

const std::vector<Value>& Value::items() const {
  if (kind_ != Kind::List) throw std::logic_error("Value: not a list: " + to_string());
  return items_;
}

const std::string& Value::uncomparable_type() const {
  if (kind_ != Kind::Uncomparable) throw std::logic_error("Value: not an uncomparable leaf: " + to_string());
  return type_;
}

double Value::scalar() const {
  if (kind_ != Kind::Scalar) throw std::logic_error("Value: not a scalar: " + to_string());
  return scalar_;
}

const at::Tensor& Value::tensor() const {
  if (kind_ != Kind::Tensor) throw std::logic_error("Value: not a tensor: " + to_string());
  return tensor_;
}

const Value::Entries& Value::entries() const {
  if (kind_ != Kind::Named) throw std::logic_error("Value: not named values: " + to_string());
  return entries_;
}

const Value& Value::at(const std::string& name) const {
  for (const auto& [key, value] : entries()) {
    if (key == name) return value;
  }
  throw std::out_of_range("Value: no entry named \"" + name + "\" in " + to_string());
}

nlohmann::json Value::to_json() const {
  switch (kind_) {
    case Kind::None: return nullptr;
    case Kind::Scalar: return number_to_json(scalar_);
    case Kind::Tensor: {
      nlohmann::json values = nlohmann::json::array();
      at::Tensor flat = tensor_.reshape(-1);
      if (flat.scalar_type() == at::kDouble) {
        auto a = flat.accessor<double, 1>();
        for (int64_t i = 0; i < flat.numel(); ++i) values.push_back(number_to_json(a[i]));
      } else if (flat.scalar_type() == at::kBool) {
        auto a = flat.accessor<bool, 1>();
        for (int64_t i = 0; i < flat.numel(); ++i) values.push_back(a[i]);
      } else {
        auto a = flat.accessor<int64_t, 1>();
        for (int64_t i = 0; i < flat.numel(); ++i) values.push_back(a[i]);
      }
      return {{"dtype", runtime::dtype_name(tensor_.scalar_type())}, {"shape", tensor_.sizes().vec()}, {"values", values}};
    }
    case Kind::Named: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& [key, value] : entries_) out[key] = value.to_json();
      return out;
    }
    case Kind::List: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : items_) out.push_back(item.to_json());
      return out;
    }
    case Kind::Uncomparable: return {{"uncomparable", type_}, {"text", text_}};
  }
  return nullptr;
}

Value Value::from_json(const nlohmann::json& j) {
  if (j.is_null()) return Value();
  if (j.is_number() || j.is_string()) return Value(number_from_json(j));
  if (j.is_object() && j.contains("dtype") && j.contains("shape") && j.contains("values")) {
    const at::ScalarType dtype = dtype_from_name(j.at("dtype").get<std::string>());
    const auto shape = j.at("shape").get<std::vector<int64_t>>();
    const auto& values = j.at("values");
    at::Tensor flat = at::empty({static_cast<int64_t>(values.size())}, at::TensorOptions().dtype(dtype));
    for (size_t i = 0; i < values.size(); ++i) {
      if (dtype == at::kBool) {
        flat[i] = values[i].get<bool>();
      } else if (at::isFloatingType(dtype)) {
        flat[i] = number_from_json(values[i]);
      } else {
        flat[i] = values[i].get<int64_t>();
      }
    }
    return Value(flat.view(shape));
  }
  if (j.is_array()) {
    std::vector<Value> items;
    for (const auto& item : j) items.push_back(from_json(item));
    return list(std::move(items));
  }
  if (j.is_object() && j.size() == 2 && j.contains("uncomparable") && j.contains("text") && j.at("uncomparable").is_string() &&
      j.at("text").is_string())
    return uncomparable(j.at("uncomparable").get<std::string>(), j.at("text").get<std::string>());
  if (j.is_object()) {
    Entries entries;
    for (const auto& [key, value] : j.items()) entries.emplace_back(key, from_json(value));
    return named(std::move(entries));
  }
  throw std::invalid_argument("Value: cannot read " + j.dump());
}

std::string Value::to_string() const {
  switch (kind_) {
    case Kind::None: return "none";
    case Kind::Scalar: {
      std::ostringstream out;
      out.precision(17);
      out << scalar_;
      return out.str();
    }
    default: return to_json().dump();
  }
}

}  // namespace distmetrics::metrics
