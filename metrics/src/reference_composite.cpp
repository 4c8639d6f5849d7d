// The registry form of composite metrics (composite.h):
//   name = "Composite"
//   params.expression = "2 * p * r / (p + r)"
//   params.operands.p = { name = "Precision", params = { task = "multiclass", num_classes = 5 } }
//   params.operands.r = { name = "Recall",    params = { task = "multiclass", num_classes = 5 } }
// Operands are built through the reference registry (a Composite operand may itself be Composite).
#include "distmetrics/metrics/composite.h"
#include "distmetrics/metrics/errors.h"
#include "reference_metrics.h"

namespace distmetrics::metrics::detail {
namespace {

constexpr const char* kName = "Composite";

// Builds the composite; every problem is a ParamError naming the field.
std::unique_ptr<Metric> build(const nlohmann::json& p) {
  std::map<std::string, MetricExpression> operands;
  for (const auto& [key, spec] : p.at("operands").items()) {
    const std::string field = "operands." + key;
    if (!spec.is_object() || !spec.contains("name") || !spec.at("name").is_string()) {
      throw ParamError(kName, field, "expected a table with a metric name, e.g. { name = \"Precision\", params = {...} }, got " +
                                         spec.dump());
    }
    for (const auto& [k, v] : spec.items()) {
      if (k != "name" && k != "params") throw ParamError(kName, field + "." + k, "unknown key (an operand has name and params)");
    }
    const nlohmann::json params = spec.contains("params") ? spec.at("params") : nlohmann::json::object();
    try {
      operands.emplace(key, operand(std::shared_ptr<Metric>(
                                MetricRegistry::reference().make(spec.at("name").get<std::string>(), params))));
    } catch (const ParamError& e) {
      throw ParamError(kName, field, e.what());
    }
  }
  if (operands.empty()) throw ParamError(kName, "operands", "expected at least one operand metric");
  const std::string text = p.at("expression").get<std::string>();
  try {
    MetricExpression expression = parse_metric_expression(text, operands);
    if (expression.operands().size() != operands.size()) {
      std::string unused;
      for (const auto& [key, e] : operands) {
        if (text.find(key) == std::string::npos) unused += (unused.empty() ? "" : ", ") + key;
      }
      throw ParamError(kName, "operands", "every operand must be used in the expression; unused: " + unused);
    }
    return std::make_unique<CompositeMetric>(kName, std::move(expression));
  } catch (const std::invalid_argument& e) {
    if (dynamic_cast<const ParamError*>(&e)) throw;
    throw ParamError(kName, "expression", e.what());
  }
}

}  // namespace

void register_composite(MetricRegistry& registry) {
  MetricSpec spec{kName, "composite",
                  "arithmetic (+ - * / ^, sqrt abs log exp) on other metrics' results, each operand synced once "
                  "per compute; every operand receives the whole batch",
                  {param("expression", "string", nullptr, "e.g. \"2 * p * r / (p + r)\", over the operand names"),
                   param("operands", "object", nullptr,
                         "operand name -> { name = <metric>, params = {...} }, e.g. p = { name = \"Precision\", "
                         "params = { task = \"binary\" } }")},
                  build};
  spec.validate = [](const nlohmann::json& p) { build(p); };
  registry.add(std::move(spec));
}

}  // namespace distmetrics::metrics::detail
