// Arithmetic on metrics: values, one sync per operand per compute, errors, the registry form.
#include "distmetrics/metrics/composite.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "distmetrics/runtime/comm.h"
#include "distmetrics/metrics/classification.h"
#include "distmetrics/metrics/errors.h"
#include "distmetrics/metrics/registry.h"
#include "distmetrics/metrics/regression.h"
#include "test_support.h"

namespace distmetrics::metrics {
namespace {

using testing::batch;

const ClassificationOptions kBinary{Task::Binary};

TEST(CompositeTest, F1FromPrecisionAndRecallSyncsEachOperandOnce) {
  auto p = operand(std::make_shared<Precision>(kBinary));
  auto r = operand(std::make_shared<Recall>(kBinary));
  CompositeMetric f1("F1", 2 * p * r / (p + r));
  EXPECT_EQ(f1.operands().size(), 2u);
  EXPECT_EQ(f1.expression().to_string(), "((2 * Precision) * Recall) / (Precision + Recall)");
  Fbeta reference(kBinary, 1.0);

  auto comm = runtime::make_single_process_communicator();
  f1.set_communicator(comm.get());
  const Batch b = batch(at::tensor({0.9, 0.8, 0.2, 0.7, 0.1}, at::kDouble), at::tensor({1, 0, 1, 1, 0}, at::kLong));
  f1.update(b);
  reference.update(b);
  // P = 2/3, R = 2/3: F1 = 2/3.
  EXPECT_NEAR(f1.compute().scalar(), reference.compute().scalar(), 1e-15);
  // Precision and Recall: one (sum, int64) collective each, although each appears twice.
  EXPECT_EQ(comm->collectives_issued(), 2u);

  const std::string digest = f1.state_digest();
  EXPECT_EQ(f1.compute().scalar(), f1.compute().scalar());
  EXPECT_EQ(f1.state_digest(), digest);
  f1.reset();
  EXPECT_THROW(f1.compute(), NotComputableError);
}

TEST(CompositeTest, IeeeArithmeticTensorsAndErrors) {
  // P = R = 0: 2PR/(P+R) is 0/0.
  auto p = operand(std::make_shared<Precision>(kBinary));
  auto r = operand(std::make_shared<Recall>(kBinary));
  CompositeMetric f1("F1", 2 * p * r / (p + r));
  f1.update(batch(at::tensor({0.9}, at::kDouble), at::tensor({0}, at::kLong)));
  EXPECT_TRUE(std::isnan(f1.compute().scalar()));

  // A per-class tensor against a scalar broadcasts.
  const ClassificationOptions mc{Task::Multiclass, 3, 0.5};
  auto per_class = operand(std::make_shared<Recall>(mc, Average::None));
  auto acc = operand(std::make_shared<Accuracy>(mc));
  CompositeMetric gap("Gap", per_class - acc);
  gap.update(batch(at::tensor({0, 1, 1, 2}, at::kLong), at::tensor({0, 1, 2, 2}, at::kLong)));
  EXPECT_TRUE(testing::values_close(gap.compute(), Value(at::tensor({0.25, 0.25, -0.25}, at::kDouble)), 0, 1e-15));

  auto a = operand(std::make_shared<Recall>(mc, Average::None));
  auto b = operand(std::make_shared<Recall>(ClassificationOptions{Task::Multiclass, 4, 0.5}, Average::None));
  CompositeMetric mismatch("Mismatch", a + b);
  mismatch.update(batch(at::tensor({0, 1}, at::kLong), at::tensor({0, 1}, at::kLong)));
  try {
    mismatch.compute();
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "Mismatch: expression Recall + Recall: expected scalar or tensor operands of matching "
                           "shapes, got cannot apply + to values shaped [3] and [4]");
  }
}

TEST(CompositeTest, ParserPrecedenceAndErrors) {
  auto m = std::make_shared<MeanSquaredError>();
  m->update(batch(at::tensor({3.0}, at::kDouble), at::tensor({1.0}, at::kDouble)));  // MSE = 4
  const std::map<std::string, MetricExpression> operands = {{"m", operand(m)}};
  auto eval = [&](const std::string& text) {
    CompositeMetric c("C", parse_metric_expression(text, operands));
    return c.compute().scalar();
  };
  EXPECT_EQ(eval("1 + 2 * m"), 9.0);
  EXPECT_EQ(eval("(1 + 2) * m"), 12.0);
  EXPECT_EQ(eval("-m ^ 2"), -16.0);
  EXPECT_EQ(eval("2 ^ 3 ^ 2"), 512.0);
  EXPECT_EQ(eval("sqrt(m) - m / 4 / 2"), 1.5);
  EXPECT_EQ(eval("abs(1 - m) * 1e-1"), 0.30000000000000004);

  auto error = [&](const std::string& text) {
    try {
      parse_metric_expression(text, operands);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("2 * q"), "unknown operand \"q\" (operands: m) at column 5 of \"2 * q\"");
  EXPECT_EQ(error("2 * (m"), "expected ')' at column 7 of \"2 * (m\"");
  EXPECT_EQ(error("cos(m)"), "unknown function \"cos\" (known: sqrt, abs, log, exp) at column 1 of \"cos(m)\"");
  EXPECT_EQ(error("m m"), "unexpected 'm' at column 3 of \"m m\"");
}

TEST(CompositeTest, RegistryFormBuildsOperandsThroughTheRegistry) {
  const auto& registry = MetricRegistry::reference();
  const nlohmann::json operands = {{"p", {{"name", "Precision"}, {"params", {{"task", "binary"}}}}},
                                   {"r", {{"name", "Recall"}, {"params", {{"task", "binary"}}}}}};
  auto f1 = registry.make("Composite", {{"expression", "2 * p * r / (p + r)"}, {"operands", operands}});
  f1->update(batch(at::tensor({0.9, 0.8, 0.2}, at::kDouble), at::tensor({1, 0, 1}, at::kLong)));
  EXPECT_DOUBLE_EQ(f1->compute().scalar(), 0.5);

  auto param_error = [&](const nlohmann::json& params) {
    try {
      registry.resolve_params("Composite", params);
    } catch (const ParamError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(param_error({{"expression", "2 * p * x"}, {"operands", operands}}),
            "Composite: parameter \"expression\": unknown operand \"x\" (operands: p, r) at column 9 of \"2 * p * x\"");
  EXPECT_EQ(param_error({{"expression", "p"}, {"operands", operands}}),
            "Composite: parameter \"operands\": every operand must be used in the expression; unused: r");
  EXPECT_EQ(param_error({{"expression", "p"}, {"operands", {{"p", {{"name", "Precison"}}}}}}).rfind(
                "Composite: parameter \"operands.p\": unknown metric 'Precison'; did you mean 'Precision'? (known: ", 0),
            0u);
  EXPECT_EQ(param_error({{"expression", "p"}, {"operands", {{"p", {{"name", "Precision"}, {"params", {{"task", "x"}}}}}}}}),
            "Composite: parameter \"operands.p\": metric 'Precision' parameter 'task': 'x' is not one of 'binary', "
            "'multiclass', 'multilabel'");
  EXPECT_EQ(param_error({{"expression", "p"}, {"operands", {{"p", {{"name", "Precision"}, {"parms", {}}}}}}}),
            "Composite: parameter \"operands.p.parms\": unknown key (an operand has name and params)");
}

}  // namespace
}  // namespace distmetrics::metrics
