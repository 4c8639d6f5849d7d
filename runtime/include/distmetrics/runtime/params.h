// Declared parameters (of metrics, data generators, ...) checked against what a scenario file or
// a caller gave: unknown names get close-name suggestions, types and choices are checked,
// defaults filled in. Errors name the parameter so the caller can point at its line. The one
// parameter schema and resolver of the project: the metric registry uses it too.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace distmetrics::runtime {

struct ParamDecl {
  std::string name;
  std::string type;               // "int", "float", "bool", "string", "int_list", "float_list",
                                  // "object" (a table, e.g. a composite metric's operands)
  std::string description;
  nlohmann::json default_value;   // null: required
  std::vector<std::string> choices;  // strings only; empty: any
  // A number's range, inclusive (the resolver refuses a value outside it); none: any.
  std::optional<double> min, max;
  // The values `explore` draws for it (docs/explore.md), each as likely; with `draws_either_sign`,
  // each with a random sign. Empty: drawn from its choices, or from its type.
  std::vector<nlohmann::json> draws;
  bool draws_either_sign = false;
  bool required() const { return default_value.is_null(); }
};

// A bad value for one named field; `field` is the parameter name ("num_classes"), empty when
// the error concerns the whole table.
class FieldError : public std::invalid_argument {
 public:
  FieldError(std::string field, const std::string& message)
      : std::invalid_argument(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// "generator 'multiclass' has no parameter 'num_clases'; did you mean 'num_classes'? (it takes
// 'num_classes', ...)": the message for an unknown parameter name.
std::string unknown_param_message(const std::string& owner, const std::string& name,
                                  const std::vector<std::string>& known);

// Checks `given` (a JSON object) against `decls`: names, types, choices and ranges; fills in
// defaults. Throws FieldError on the first problem.
// `owner` names what the parameters belong to in messages ("generator 'multiclass'").
nlohmann::json resolve_declared_params(const std::string& owner, const std::vector<ParamDecl>& decls,
                                       const nlohmann::json& given);

}  // namespace distmetrics::runtime
