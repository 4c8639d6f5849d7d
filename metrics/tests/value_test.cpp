#include "distmetrics/metrics/value.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace distmetrics::metrics {
namespace {

TEST(ValueTest, ScalarRoundTripsThroughJsonIncludingNonFinite) {
  EXPECT_EQ(Value(0.25).to_json(), nlohmann::json(0.25));
  EXPECT_EQ(Value(std::nan("")).to_json(), nlohmann::json("nan"));
  EXPECT_EQ(Value(-INFINITY).to_json(), nlohmann::json("-inf"));
  EXPECT_TRUE(std::isnan(Value::from_json("nan").scalar()));
  EXPECT_DOUBLE_EQ(Value::from_json(1.5).scalar(), 1.5);
}

TEST(ValueTest, TensorJsonKeepsShapeDtypeAndValues) {
  Value v(at::arange(6, at::kLong).view({2, 3}));
  const auto j = v.to_json();
  EXPECT_EQ(j.at("dtype"), "int64");
  EXPECT_EQ(j.at("shape"), nlohmann::json({2, 3}));
  EXPECT_EQ(j.at("values"), nlohmann::json({0, 1, 2, 3, 4, 5}));
  Value back = Value::from_json(j);
  EXPECT_TRUE(at::equal(back.tensor(), v.tensor()));
}

TEST(ValueTest, FloatTensorsAreStoredAsFloat64) {
  Value v(at::tensor({0.5f, 1.5f}));
  EXPECT_EQ(v.tensor().scalar_type(), at::kDouble);
  EXPECT_EQ(v.to_json().at("values"), nlohmann::json({0.5, 1.5}));
}

TEST(ValueTest, NamedValuesAreLookedUpByName) {
  Value v = Value::named({{"precision", 0.5}, {"recall", 0.75}});
  EXPECT_DOUBLE_EQ(v.at("recall").scalar(), 0.75);
  EXPECT_THROW(v.at("f1"), std::out_of_range);
  EXPECT_THROW(v.scalar(), std::logic_error);
  EXPECT_DOUBLE_EQ(Value::from_json(v.to_json()).at("precision").scalar(), 0.5);
}

}  // namespace
}  // namespace distmetrics::metrics
