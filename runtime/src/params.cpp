#include "distmetrics/runtime/params.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "distmetrics/runtime/text.h"

namespace distmetrics::runtime {
namespace {

bool has_type(const nlohmann::json& value, const std::string& type) {
  if (type == "int") return value.is_number_integer();
  if (type == "float") return value.is_number();
  if (type == "bool") return value.is_boolean();
  if (type == "string") return value.is_string();
  if (type == "object") return value.is_object();
  if (type == "float_list") {
    return value.is_array() &&
           std::all_of(value.begin(), value.end(), [](const auto& v) { return v.is_number(); });
  }
  if (type == "int_list") {
    return value.is_array() &&
           std::all_of(value.begin(), value.end(), [](const auto& v) { return v.is_number_integer(); });
  }
  throw std::logic_error("ParamDecl: unknown type '" + type + "'");
}

std::string type_phrase(const std::string& type) {
  if (type == "int") return "an integer";
  if (type == "float") return "a number";
  if (type == "bool") return "true or false";
  if (type == "string") return "a string";
  if (type == "float_list") return "a list of numbers";
  if (type == "int_list") return "a list of integers";
  if (type == "object") return "a table";
  return type;
}

}  // namespace

std::string unknown_param_message(const std::string& owner, const std::string& name,
                                  const std::vector<std::string>& known) {
  return owner + " has no parameter '" + name + "'" + did_you_mean(name, known) +
         (known.empty() ? " (it takes none)" : " (it takes " + quoted_list(known) + ")");
}

nlohmann::json resolve_declared_params(const std::string& owner, const std::vector<ParamDecl>& decls,
                                       const nlohmann::json& given) {
  if (!given.is_null() && !given.is_object())
    throw FieldError("", owner + ": parameters must be a table, got " + given.dump());
  std::vector<std::string> known;
  for (const auto& d : decls) known.push_back(d.name);
  if (given.is_object()) {
    for (const auto& [key, value] : given.items()) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        throw FieldError(key, unknown_param_message(owner, key, known));
      }
    }
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& d : decls) {
    const bool present = given.is_object() && given.contains(d.name);
    if (!present) {
      if (d.default_value.is_null())
        throw FieldError(d.name, owner + " needs parameter '" + d.name + "' (" + type_phrase(d.type) +
                                     ": " + d.description + ")");
      out[d.name] = d.default_value;
      continue;
    }
    const auto& value = given.at(d.name);
    if (!has_type(value, d.type))
      throw FieldError(d.name, owner + " parameter '" + d.name + "': expected " + type_phrase(d.type) +
                                   ", got " + value.dump());
    if (!d.choices.empty()) {
      const auto s = value.get<std::string>();
      if (std::find(d.choices.begin(), d.choices.end(), s) == d.choices.end())
        throw FieldError(d.name, owner + " parameter '" + d.name + "': '" + s + "' is not one of " +
                                     quoted_list(d.choices) + did_you_mean(s, d.choices));
    }
    if ((d.min || d.max) && value.is_number()) {
      const double v = value.get<double>();
      const double lo = d.min.value_or(-INFINITY), hi = d.max.value_or(INFINITY);
      if (!std::isfinite(v) || v < lo || v > hi)
        throw FieldError(d.name, owner + " parameter '" + d.name + "' must be in [" + nlohmann::json(lo).dump() + ", " +
                                     nlohmann::json(hi).dump() + "], got " + value.dump());
    }
    out[d.name] = d.type == "float" ? nlohmann::json(value.get<double>()) : value;
  }
  return out;
}

}  // namespace distmetrics::runtime
