// What the data generators share (making.h).
#include "making.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "distmetrics/runtime/params.h"

namespace distmetrics::harness::generators {

using nlohmann::json;

runtime::ParamDecl param(std::string name, std::string type, std::string description, json default_value,
                         std::vector<std::string> choices) {
  runtime::ParamDecl decl;
  decl.name = std::move(name);
  decl.type = std::move(type);
  decl.description = std::move(description);
  decl.default_value = std::move(default_value);
  decl.choices = std::move(choices);
  return decl;
}

runtime::ParamDecl ranged(runtime::ParamDecl decl, double min, double max) {
  decl.min = min;
  decl.max = max;
  return decl;
}

runtime::ParamDecl drawn(runtime::ParamDecl decl, std::vector<json> draws, bool either_sign) {
  decl.draws = std::move(draws);
  decl.draws_either_sign = either_sign;
  return decl;
}

runtime::ParamDecl separation(double default_value) {
  return drawn(ranged(param("separation", "float", "how far the true class's score sits above the noise (larger: easier)",
                            default_value),
                      -1e6, 1e6),
               {0.0, 0.5, 1.5, 5.0});
}

runtime::ParamDecl num_classes() {
  return ranged(param("num_classes", "int", "number of classes C (>= 2)", nullptr), 2, 1000);
}

runtime::ParamDecl class_weights(const std::string& description) {
  return param("class_weights", "float_list", description, json::array());
}

void check_class_weights(const std::string& owner, const json& p) {
  const auto& w = p.at("class_weights");
  if (w.empty()) return;
  if (static_cast<std::int64_t>(w.size()) != p.at("num_classes").get<std::int64_t>())
    throw runtime::FieldError("class_weights", owner + ": class_weights has " + std::to_string(w.size()) +
                                                   " entries but num_classes is " + p.at("num_classes").dump());
  double total = 0;
  for (const auto& x : w) {
    if (!(x.get<double>() >= 0 && std::isfinite(x.get<double>())))
      throw runtime::FieldError("class_weights", owner + ": class_weights must be finite and >= 0, got " + x.dump());
    total += x.get<double>();
  }
  if (!(total > 0)) throw runtime::FieldError("class_weights", owner + ": class_weights must not all be 0");
}

std::vector<runtime::ParamDecl> with_common(std::vector<runtime::ParamDecl> params) {
  for (const auto& common : common_generator_params()) params.push_back(common);
  return params;
}

std::int64_t count_of(const Rows& rows) { return static_cast<std::int64_t>(rows.size()); }

at::ScalarType float_type(const std::string& dtype) { return dtype == "float64" ? at::kDouble : at::kFloat; }

at::Tensor float_tensor(const std::vector<double>& values, std::vector<std::int64_t> shape, at::ScalarType type) {
  auto t = at::empty(shape, at::TensorOptions().dtype(at::kDouble));
  if (!values.empty()) std::memcpy(t.data_ptr<double>(), values.data(), values.size() * sizeof(double));
  return t.to(type);
}

at::Tensor long_tensor(const std::vector<std::int64_t>& values, std::vector<std::int64_t> shape) {
  auto t = at::empty(shape, at::TensorOptions().dtype(at::kLong));
  if (!values.empty()) std::memcpy(t.data_ptr<std::int64_t>(), values.data(), values.size() * sizeof(std::int64_t));
  return t;
}

std::vector<std::int64_t> row_shape(std::int64_t n, std::int64_t dims) {
  return dims == 0 ? std::vector<std::int64_t>{n} : std::vector<std::int64_t>{n, dims};
}

std::vector<double> class_cdf(const json& weights, std::int64_t classes) {
  std::vector<double> cdf(classes);
  double total = 0;
  for (std::int64_t c = 0; c < classes; ++c) {
    total += weights.empty() ? 1.0 : weights.at(c).get<double>();
    cdf[c] = total;
  }
  for (auto& x : cdf) x /= total;
  return cdf;
}

std::int64_t draw_class(const std::vector<double>& cdf, double u) {
  for (std::size_t c = 0; c < cdf.size(); ++c)
    if (u < cdf[c]) return static_cast<std::int64_t>(c);
  return static_cast<std::int64_t>(cdf.size()) - 1;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

at::Tensor class_output(const Scores& s, const std::string& output, std::vector<std::int64_t> shape,
                        std::vector<std::int64_t> label_shape, at::ScalarType type) {
  if (output == "logits") return float_tensor(s.logits, shape, type);
  if (output == "probabilities" || output == "log_probabilities") {
    const bool logs = output == "log_probabilities";
    std::vector<double> probs(s.logits.size());
    for (std::int64_t i = 0; i < s.n; ++i) {
      const double* row = &s.logits[i * s.k];
      const double top = *std::max_element(row, row + s.k);
      double total = 0;
      for (std::int64_t j = 0; j < s.k; ++j) total += probs[i * s.k + j] = std::exp(row[j] - top);
      for (std::int64_t j = 0; j < s.k; ++j)
        probs[i * s.k + j] = logs ? row[j] - top - std::log(total) : probs[i * s.k + j] / total;
    }
    return float_tensor(probs, shape, type);
  }
  std::vector<std::int64_t> labels(s.n);
  for (std::int64_t i = 0; i < s.n; ++i) {
    const double* row = &s.logits[i * s.k];
    labels[i] = std::max_element(row, row + s.k) - row;
  }
  return long_tensor(labels, label_shape);
}

at::Tensor elementwise_output(const std::vector<double>& logits, const std::string& output,
                              std::vector<std::int64_t> shape, at::ScalarType type) {
  if (output == "logits" || output == "scores") return float_tensor(logits, shape, type);
  if (output == "probabilities") {
    std::vector<double> probs(logits.size());
    std::transform(logits.begin(), logits.end(), probs.begin(), sigmoid);
    return float_tensor(probs, shape, type);
  }
  std::vector<std::int64_t> labels(logits.size());
  std::transform(logits.begin(), logits.end(), labels.begin(), [](double x) { return x > 0 ? 1 : 0; });
  return long_tensor(labels, shape);
}

std::int64_t size_param(const json& p, const char* name, std::int64_t fallback) {
  return p.contains(name) && p.at(name).is_number_integer() ? std::max<std::int64_t>(p.at(name).get<std::int64_t>(), 1)
                                                            : fallback;
}

}  // namespace distmetrics::harness::generators

namespace distmetrics::harness::generators {
const std::vector<nlohmann::json>& magnitudes() {
  static const std::vector<nlohmann::json> values = {0.0, 1e-7, 1e-3, 1.0, 3.0, 1e3, 1e6, 1e9, 1e12};
  return values;
}
}  // namespace distmetrics::harness::generators
