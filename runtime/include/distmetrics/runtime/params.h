// Declared parameters (of data generators, shard policies, ...) checked against what a scenario
// file gave: unknown names get close-name suggestions, types and choices are checked, defaults
// filled in. Errors name the parameter so the caller can point at its line.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace distmetrics::runtime {

struct ParamDecl {
  std::string name;
  std::string type;               // "int", "float", "bool", "string", "float_list"
  std::string description;
  nlohmann::json default_value;   // null: required
  std::vector<std::string> choices;  // strings only; empty: any
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

// Checks `given` (a JSON object) against `decls`; throws FieldError on the first problem.
// `owner` names what the parameters belong to in messages ("generator 'multiclass'").
nlohmann::json resolve_declared_params(const std::string& owner, const std::vector<ParamDecl>& decls,
                                       const nlohmann::json& given);

}  // namespace distmetrics::runtime
