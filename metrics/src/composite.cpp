#include "distmetrics/metrics/composite.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "distmetrics/metrics/errors.h"
#include "distmetrics/metrics/input_checks.h"
#include "reference_metrics.h"

namespace distmetrics::metrics {

struct MetricExpression::Node {
  enum class Kind { Constant, Operand, Unary, Binary };
  Kind kind = Kind::Constant;
  double constant = 0.0;
  std::shared_ptr<Metric> metric;
  std::string op;  // Unary: "neg", "sqrt", "abs", "log", "exp"; Binary: "+", "-", "*", "/", "^"
  std::shared_ptr<const Node> left, right;
};

namespace {

using Node = MetricExpression::Node;

// A Value as arithmetic sees it: a double, or a float64 tensor.
struct Number {
  bool is_tensor = false;
  double scalar = 0.0;
  at::Tensor tensor;
  at::Tensor as_tensor() const { return is_tensor ? tensor : at::scalar_tensor(scalar, at::kDouble); }
};

Number number_of(const Value& v, const std::string& what) {
  switch (v.kind()) {
    case Value::Kind::Scalar: return {false, v.scalar(), {}};
    case Value::Kind::Tensor: return {true, 0.0, v.tensor().to(at::kDouble)};
    default:
      throw std::invalid_argument(what + " returned " + v.to_string() + "; arithmetic needs a scalar or a tensor");
  }
}

double unary(const std::string& op, double x) {
  if (op == "neg") return -x;
  if (op == "sqrt") return std::sqrt(x);
  if (op == "abs") return std::fabs(x);
  if (op == "log") return std::log(x);
  if (op == "exp") return std::exp(x);
  throw std::logic_error("unknown function " + op);
}

at::Tensor unary(const std::string& op, const at::Tensor& x) {
  if (op == "neg") return -x;
  if (op == "sqrt") return x.sqrt();
  if (op == "abs") return x.abs();
  if (op == "log") return x.log();
  if (op == "exp") return x.exp();
  throw std::logic_error("unknown function " + op);
}

template <typename T>
T binary(const std::string& op, const T& a, const T& b) {
  if (op == "+") return a + b;
  if (op == "-") return a - b;
  if (op == "*") return a * b;
  if (op == "/") return a / b;
  throw std::logic_error("unknown operator " + op);
}

Number evaluate_node(const Node& n, const std::map<const Metric*, Value>& values) {
  switch (n.kind) {
    case Node::Kind::Constant: return {false, n.constant, {}};
    case Node::Kind::Operand: {
      auto it = values.find(n.metric.get());
      if (it == values.end()) throw std::logic_error("composite metric: no value for operand " + n.metric->name());
      return number_of(it->second, "operand " + n.metric->name());
    }
    case Node::Kind::Unary: {
      const Number x = evaluate_node(*n.left, values);
      if (!x.is_tensor) return {false, unary(n.op, x.scalar), {}};
      return {true, 0.0, unary(n.op, x.tensor)};
    }
    case Node::Kind::Binary: {
      const Number a = evaluate_node(*n.left, values), b = evaluate_node(*n.right, values);
      if (!a.is_tensor && !b.is_tensor) {
        return {false, n.op == "^" ? std::pow(a.scalar, b.scalar) : binary(n.op, a.scalar, b.scalar), {}};
      }
      try {
        const at::Tensor x = a.as_tensor(), y = b.as_tensor();
        return {true, 0.0, n.op == "^" ? x.pow(y) : binary(n.op, x, y)};
      } catch (const c10::Error& e) {
        throw std::invalid_argument("cannot apply " + n.op + " to values shaped " +
                                    checks::shape_string(a.as_tensor().sizes()) + " and " +
                                    checks::shape_string(b.as_tensor().sizes()));
      }
    }
  }
  throw std::logic_error("composite metric: unknown node");
}

void collect(const Node& n, std::vector<std::shared_ptr<Metric>>& out) {
  if (n.kind == Node::Kind::Operand) {
    if (std::find(out.begin(), out.end(), n.metric) == out.end()) out.push_back(n.metric);
  }
  if (n.left) collect(*n.left, out);
  if (n.right) collect(*n.right, out);
}

std::string describe_node(const Node& n) {
  switch (n.kind) {
    case Node::Kind::Constant: {
      std::ostringstream out;
      out << n.constant;
      return out.str();
    }
    case Node::Kind::Operand: return n.metric->name();
    case Node::Kind::Unary:
      return n.op == "neg" ? "-" + describe_node(*n.left) : n.op + "(" + describe_node(*n.left) + ")";
    case Node::Kind::Binary: {
      auto side = [](const Node& s) {
        return s.kind == Node::Kind::Binary ? "(" + describe_node(s) + ")" : describe_node(s);
      };
      return side(*n.left) + " " + n.op + " " + side(*n.right);
    }
  }
  return "?";
}

}  // namespace

// --- MetricExpression ----------------------------------------------------------------------------

MetricExpression::MetricExpression(double constant) {
  auto n = std::make_shared<Node>();
  n->kind = Node::Kind::Constant;
  n->constant = constant;
  node_ = n;
}

MetricExpression operand(std::shared_ptr<Metric> metric) {
  if (!metric) throw std::invalid_argument("operand: null metric");
  auto n = std::make_shared<Node>();
  n->kind = Node::Kind::Operand;
  n->metric = std::move(metric);
  return MetricExpression(std::shared_ptr<const Node>(n));
}

namespace {
MetricExpression::Node binary_node(const std::string& op) {
  MetricExpression::Node n;
  n.kind = MetricExpression::Node::Kind::Binary;
  n.op = op;
  return n;
}
}  // namespace

#define DISTMETRICS_BINARY_OPERATOR(symbol, text)                                         \
  MetricExpression operator symbol(const MetricExpression& a, const MetricExpression& b) { \
    auto n = std::make_shared<Node>(binary_node(text));                                   \
    n->left = a.node_;                                                                    \
    n->right = b.node_;                                                                   \
    return MetricExpression(std::shared_ptr<const Node>(n));                              \
  }
DISTMETRICS_BINARY_OPERATOR(+, "+")
DISTMETRICS_BINARY_OPERATOR(-, "-")
DISTMETRICS_BINARY_OPERATOR(*, "*")
DISTMETRICS_BINARY_OPERATOR(/, "/")
#undef DISTMETRICS_BINARY_OPERATOR

MetricExpression pow(const MetricExpression& a, const MetricExpression& b) {
  auto n = std::make_shared<Node>(binary_node("^"));
  n->left = a.node_;
  n->right = b.node_;
  return MetricExpression(std::shared_ptr<const Node>(n));
}

MetricExpression apply_function(const std::string& function, const MetricExpression& a) {
  static const char* kFunctions[] = {"neg", "sqrt", "abs", "log", "exp"};
  if (std::find(std::begin(kFunctions), std::end(kFunctions), function) == std::end(kFunctions)) {
    throw std::invalid_argument("unknown function \"" + function + "\" (known: sqrt, abs, log, exp)");
  }
  auto n = std::make_shared<Node>();
  n->kind = Node::Kind::Unary;
  n->op = function;
  n->left = a.node_;
  return MetricExpression(std::shared_ptr<const Node>(n));
}

MetricExpression operator-(const MetricExpression& a) { return apply_function("neg", a); }
MetricExpression sqrt(const MetricExpression& a) { return apply_function("sqrt", a); }

std::vector<std::shared_ptr<Metric>> MetricExpression::operands() const {
  std::vector<std::shared_ptr<Metric>> out;
  collect(*node_, out);
  return out;
}

Value MetricExpression::evaluate(const std::map<const Metric*, Value>& values) const {
  const Number n = evaluate_node(*node_, values);
  return n.is_tensor ? Value(n.tensor) : Value(n.scalar);
}

std::string MetricExpression::to_string() const { return describe_node(*node_); }

// --- CompositeMetric -----------------------------------------------------------------------------

CompositeMetric::CompositeMetric(std::string name, MetricExpression expression)
    : name_(std::move(name)), expression_(std::move(expression)), operands_(expression_.operands()) {}

void CompositeMetric::reset() {
  for (auto& m : operands_) m->reset();
}

void CompositeMetric::update(const Batch& batch) {
  for (auto& m : operands_) m->update(batch);
}

Value CompositeMetric::compute() {
  // Each operand once, in a fixed order, so every rank issues the same collectives.
  std::map<const Metric*, Value> values;
  for (auto& m : operands_) values[m.get()] = m->compute();
  try {
    return expression_.evaluate(values);
  } catch (const std::invalid_argument& e) {
    throw InputError(name_, "expression " + expression_.to_string(), "scalar or tensor operands of matching shapes",
                     e.what());
  }
}

void CompositeMetric::set_communicator(runtime::Communicator* comm) {
  for (auto& m : operands_) m->set_communicator(comm);
}

void CompositeMetric::to(c10::Device device) {
  device_ = device;
  for (auto& m : operands_) m->to(device);
}

std::string CompositeMetric::state_digest() const {
  std::string out;
  for (const auto& m : operands_) {
    const std::string d = m->state_digest();
    if (d.empty()) return "";
    out += (out.empty() ? "" : ";") + d;
  }
  return out;
}

// --- Parser --------------------------------------------------------------------------------------

namespace {

class Parser {
 public:
  Parser(const std::string& text, const std::map<std::string, MetricExpression>& operands)
      : text_(text), operands_(operands) {}

  MetricExpression parse() {
    MetricExpression e = sum();
    skip_space();
    if (pos_ < text_.size()) fail(std::string("unexpected '") + text_[pos_] + "'");
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument(what + " at column " + std::to_string(pos_ + 1) + " of \"" + text_ + "\"");
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  MetricExpression sum() {
    MetricExpression e = product();
    for (;;) {
      if (accept('+')) e = e + product();
      else if (accept('-')) e = e - product();
      else return e;
    }
  }
  MetricExpression product() {
    MetricExpression e = unary_minus();
    for (;;) {
      if (accept('*')) e = e * unary_minus();
      else if (accept('/')) e = e / unary_minus();
      else return e;
    }
  }
  MetricExpression unary_minus() {
    if (accept('-')) return -unary_minus();
    return power();
  }
  MetricExpression power() {
    MetricExpression base = primary();
    if (accept('^')) return pow(base, unary_minus());  // right-associative
    return base;
  }
  MetricExpression primary() {
    skip_space();
    if (pos_ >= text_.size()) fail("expected a number, a name or '('");
    if (accept('(')) {
      MetricExpression e = sum();
      if (!accept(')')) fail("expected ')'");
      return e;
    }
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      std::size_t used = 0;
      double v = 0;
      try {
        v = std::stod(text_.substr(pos_), &used);
      } catch (const std::exception&) {
        fail("bad number");
      }
      pos_ += used;
      return MetricExpression(v);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = pos_;
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
      const std::string name = text_.substr(start, pos_ - start);
      if (accept('(')) {
        if (name != "sqrt" && name != "abs" && name != "log" && name != "exp") {
          pos_ = start;
          fail("unknown function \"" + name + "\" (known: sqrt, abs, log, exp)");
        }
        MetricExpression arg = sum();
        if (!accept(')')) fail("expected ')'");
        return apply_function(name, arg);
      }
      auto it = operands_.find(name);
      if (it == operands_.end()) {
        std::string known;
        for (const auto& [k, v] : operands_) known += (known.empty() ? "" : ", ") + k;
        pos_ = start;
        fail("unknown operand \"" + name + "\" (operands: " + (known.empty() ? "none" : known) + ")");
      }
      return it->second;
    }
    fail(std::string("unexpected '") + c + "'");
  }

  const std::string& text_;
  const std::map<std::string, MetricExpression>& operands_;
  std::size_t pos_ = 0;
};

}  // namespace

MetricExpression parse_metric_expression(const std::string& text,
                                         const std::map<std::string, MetricExpression>& operands) {
  return Parser(text, operands).parse();
}

}  // namespace distmetrics::metrics

// --- Registration in the reference registry (registry.h), next to the classes ------------

// The registry form of composite metrics (composite.h):
//   name = "Composite"
//   params.expression = "2 * p * r / (p + r)"
//   params.operands.p = { name = "Precision", params = { task = "multiclass", num_classes = 5 } }
//   params.operands.r = { name = "Recall",    params = { task = "multiclass", num_classes = 5 } }
// Operands are built through the reference registry (a Composite operand may itself be Composite).
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
