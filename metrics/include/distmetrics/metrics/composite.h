// Arithmetic on metrics: F1 from Precision and Recall, RMSE from MSE, and so on.
//
//   auto p = operand(std::make_shared<Precision>(options, Average::Micro));
//   auto r = operand(std::make_shared<Recall>(options, Average::Micro));
//   CompositeMetric f1("F1", 2 * p * r / (p + r));
//
// A CompositeMetric updates each distinct operand metric once per batch (every operand receives
// the whole batch) and, on compute(), computes each distinct operand ONCE, then evaluates the
// expression on the results: a metric used several times (p above) still syncs once per
// compute, so the collectives per compute are the sum of the operands'. Operands are shared
// pointers: the same metric object in two places is one operand.
//
// Values: scalars and tensors, with broadcasting (a scalar against a tensor applies elementwise);
// named values are an error. Arithmetic is IEEE: 0/0 is NaN (so 2PR/(P+R) with P = R = 0 is NaN,
// where Fbeta reports 0). An operand raising (e.g. NotComputableError) makes compute() raise the
// same error, on every rank alike since the operand decides from synced values.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "distmetrics/metrics/metric.h"

namespace distmetrics::metrics {

class MetricExpression {
 public:
  MetricExpression(double constant);  // NOLINT(google-explicit-constructor): `2 * p` reads naturally

  // Distinct operand metrics in order of first appearance.
  std::vector<std::shared_ptr<Metric>> operands() const;
  // Evaluates with each operand's value (keyed by the metric object).
  Value evaluate(const std::map<const Metric*, Value>& values) const;
  std::string to_string() const;  // e.g. "((2 * Precision) * Recall) / (Precision + Recall)"

  friend MetricExpression operand(std::shared_ptr<Metric> metric);
  friend MetricExpression operator+(const MetricExpression& a, const MetricExpression& b);
  friend MetricExpression operator-(const MetricExpression& a, const MetricExpression& b);
  friend MetricExpression operator*(const MetricExpression& a, const MetricExpression& b);
  friend MetricExpression operator/(const MetricExpression& a, const MetricExpression& b);
  friend MetricExpression operator-(const MetricExpression& a);
  // Elementwise functions: "sqrt", "abs", "log", "exp"; and a ^ b (pow).
  friend MetricExpression apply_function(const std::string& function, const MetricExpression& a);
  friend MetricExpression pow(const MetricExpression& a, const MetricExpression& b);

  struct Node;

 private:
  explicit MetricExpression(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  std::shared_ptr<const Node> node_;
};

MetricExpression operand(std::shared_ptr<Metric> metric);
MetricExpression sqrt(const MetricExpression& a);
MetricExpression apply_function(const std::string& function, const MetricExpression& a);
MetricExpression pow(const MetricExpression& a, const MetricExpression& b);

class CompositeMetric : public Metric {
 public:
  CompositeMetric(std::string name, MetricExpression expression);

  std::string name() const override { return name_; }
  void reset() override;
  void update(const Batch& batch) override;
  Value compute() override;
  void set_communicator(runtime::Communicator* comm) override;
  void to(c10::Device device) override;
  c10::Device device() const override { return device_; }
  // The operands' digests, in operand order (empty when an operand cannot tell).
  std::string state_digest() const override;

  const MetricExpression& expression() const { return expression_; }
  const std::vector<std::shared_ptr<Metric>>& operands() const { return operands_; }

 private:
  std::string name_;
  MetricExpression expression_;
  std::vector<std::shared_ptr<Metric>> operands_;
  c10::Device device_{c10::kCPU};
};

// Parses an expression over named operands: numbers, operand names, + - * / ^, parentheses, unary
// minus, and the functions sqrt, abs, log, exp, e.g. "2 * p * r / (p + r)". Throws
// std::invalid_argument naming the column on a syntax error or an unknown name.
MetricExpression parse_metric_expression(const std::string& text,
                                         const std::map<std::string, MetricExpression>& operands);

}  // namespace distmetrics::metrics
