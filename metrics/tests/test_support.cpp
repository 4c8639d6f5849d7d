#include "test_support.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

namespace distmetrics::metrics::testing {
namespace {

at::ScalarType dtype_from(const std::string& name) {
  static const std::map<std::string, at::ScalarType> kTypes = {
      {"float64", at::kDouble}, {"float32", at::kFloat}, {"int64", at::kLong},
      {"int32", at::kInt},      {"uint8", at::kByte},    {"bool", at::kBool}};
  auto it = kTypes.find(name);
  if (it == kTypes.end()) throw std::invalid_argument("reference data: unknown dtype " + name);
  return it->second;
}

bool numbers_close(double a, double b, double rtol, double atol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= atol + rtol * std::fabs(b);
}

}  // namespace

const nlohmann::json& reference_document() {
  static const nlohmann::json doc = [] {
    const std::string path = std::string(DISTMETRICS_METRICS_TEST_DATA_DIR) + "/reference_values.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    return nlohmann::json::parse(in);
  }();
  return doc;
}

std::vector<nlohmann::json> reference_cases(const std::string& metric) {
  std::vector<nlohmann::json> out;
  for (const auto& c : reference_document().at("cases")) {
    if (metric.empty() || c.at("metric") == metric) out.push_back(c);
  }
  return out;
}

std::vector<std::string> reference_metric_names() {
  std::set<std::string> names;
  for (const auto& c : reference_document().at("cases")) names.insert(c.at("metric").get<std::string>());
  return {names.begin(), names.end()};
}

at::Tensor tensor_from_json(const nlohmann::json& j) {
  const at::ScalarType dtype = dtype_from(j.at("dtype").get<std::string>());
  const auto shape = j.at("shape").get<std::vector<std::int64_t>>();
  const auto& values = j.at("values");
  at::Tensor flat = at::empty({static_cast<std::int64_t>(values.size())}, at::kDouble);
  auto a = flat.accessor<double, 1>();
  for (size_t i = 0; i < values.size(); ++i) {
    const auto& v = values[i];
    if (v.is_boolean()) {
      a[i] = v.get<bool>() ? 1.0 : 0.0;
    } else if (v.is_string()) {
      const std::string s = v.get<std::string>();
      a[i] = s == "nan" ? NAN : s == "inf" ? INFINITY : s == "-inf" ? -INFINITY : throw std::invalid_argument(s);
    } else if (v.is_number_integer()) {
      a[i] = 0;  // set below, exactly, as an integer
    } else {
      a[i] = v.get<double>();
    }
  }
  if (at::isIntegralType(dtype, /*includeBool=*/false)) {
    at::Tensor ints = at::empty({static_cast<std::int64_t>(values.size())}, at::kLong);
    auto b = ints.accessor<std::int64_t, 1>();
    for (size_t i = 0; i < values.size(); ++i) b[i] = values[i].get<std::int64_t>();
    return ints.to(dtype).view(shape);
  }
  return flat.to(dtype).view(shape);  // float32 values were written exactly representable
}

Batch batch(at::Tensor input, at::Tensor target, at::Tensor weight) {
  Batch b;
  b.input = std::move(input);
  b.target = std::move(target);
  b.weight = std::move(weight);
  return b;
}

at::Tensor doubles(std::vector<double> v) { return at::tensor(v, at::kDouble); }
at::Tensor longs(std::vector<std::int64_t> v) { return at::tensor(v, at::kLong); }

Batch batch_from_json(const nlohmann::json& j) {
  Batch b;
  if (j.contains("input")) b.input = tensor_from_json(j.at("input"));
  if (j.contains("target")) b.target = tensor_from_json(j.at("target"));
  if (j.contains("weight")) b.weight = tensor_from_json(j.at("weight"));
  return b;
}

std::vector<Batch> dataset(const std::string& name) {
  std::vector<Batch> out;
  for (const auto& b : reference_document().at("datasets").at(name)) out.push_back(batch_from_json(b));
  return out;
}

bool holds_samples(const nlohmann::json& reference_case) {
  for (const Batch& b : dataset(reference_case.at("data").get<std::string>())) {
    if (b.size() > 0) return true;
  }
  return false;
}

std::vector<std::string> expected_collectives(std::vector<std::string> plan, bool any_rank_holds_rows) {
  if (!any_rank_holds_rows) {
    plan.erase(std::remove_if(plan.begin(), plan.end(),
                              [](const std::string& op) { return op.rfind("all_gather ", 0) == 0; }),
               plan.end());
  }
  return plan;
}

::testing::AssertionResult values_close(const Value& actual, const Value& expected, double rtol, double atol) {
  if (actual.kind() != expected.kind()) {
    return ::testing::AssertionFailure() << "got " << actual.to_string() << ", expected " << expected.to_string();
  }
  switch (expected.kind()) {
    case Value::Kind::None: return ::testing::AssertionSuccess();
    case Value::Kind::Scalar:
      if (numbers_close(actual.scalar(), expected.scalar(), rtol, atol)) return ::testing::AssertionSuccess();
      return ::testing::AssertionFailure() << "got " << actual.to_string() << ", expected " << expected.to_string()
                                           << " (difference " << actual.scalar() - expected.scalar() << ")";
    case Value::Kind::Tensor: {
      const at::Tensor a = actual.tensor().to(at::kDouble).reshape(-1);
      const at::Tensor e = expected.tensor().to(at::kDouble).reshape(-1);
      if (!actual.tensor().sizes().equals(expected.tensor().sizes())) {
        return ::testing::AssertionFailure() << "shape: got " << actual.to_string() << ", expected "
                                             << expected.to_string();
      }
      for (std::int64_t i = 0; i < e.numel(); ++i) {
        if (!numbers_close(a[i].item<double>(), e[i].item<double>(), rtol, atol)) {
          return ::testing::AssertionFailure() << "element " << i << ": got " << actual.to_string()
                                               << ", expected " << expected.to_string();
        }
      }
      return ::testing::AssertionSuccess();
    }
    case Value::Kind::Named: {
      if (actual.entries().size() != expected.entries().size()) {
        return ::testing::AssertionFailure() << "got " << actual.to_string() << ", expected " << expected.to_string();
      }
      for (const auto& [key, value] : expected.entries()) {
        auto result = values_close(actual.at(key), value, rtol, atol);
        if (!result) return ::testing::AssertionFailure() << key << ": " << result.message();
      }
      return ::testing::AssertionSuccess();
    }
    case Value::Kind::List: {
      if (actual.items().size() != expected.items().size()) {
        return ::testing::AssertionFailure() << "got " << actual.to_string() << ", expected " << expected.to_string();
      }
      for (std::size_t i = 0; i < expected.items().size(); ++i) {
        auto result = values_close(actual.items()[i], expected.items()[i], rtol, atol);
        if (!result) return ::testing::AssertionFailure() << "[" << i << "]: " << result.message();
      }
      return ::testing::AssertionSuccess();
    }
    case Value::Kind::Uncomparable:
      return ::testing::AssertionFailure() << "cannot compare a " << expected.uncomparable_type();
  }
  return ::testing::AssertionFailure() << "unknown kind";
}

}  // namespace distmetrics::metrics::testing
