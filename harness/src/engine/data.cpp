// Data generators. Each draws from its own streams of a counter-based generator; sample i uses
// counters derived from i only, so data are the same on every rank and prefix-stable.
#include "distmetrics/harness/data.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "counter_rng.h"
#include "distmetrics/harness/data_files.h"
#include "distmetrics/harness/input_dtype.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness {
namespace {

using detail::CounterRng;
using nlohmann::json;

// Streams: one per purpose, so adding a draw for one purpose never shifts another.
constexpr std::uint64_t kTargetStream = 1, kNoiseStream = 2, kWeightStream = 3, kOutlierStream = 4;

std::vector<runtime::ParamDecl> with_common(std::vector<runtime::ParamDecl> params) {
  params.push_back({"weights", "string",
                    "per-sample weights: none, uniform (real, in [weight_low, weight_high]) or "
                    "integers (whole numbers in [weight_low, weight_high])",
                    "none", {"none", "uniform", "integers"}});
  params.push_back({"weight_low", "float", "smallest weight", 1.0, {}});
  params.push_back({"weight_high", "float", "largest weight", 2.0, {}});
  return params;
}

const runtime::ParamDecl kSeparation{"separation", "float",
                            "how far the true class's score sits above the noise (larger: easier)", 1.5, {}};

std::vector<GeneratorSpec> make_specs() {
  std::vector<GeneratorSpec> specs;
  specs.push_back({"binary",
                   "binary classification: input [N] probabilities or logits (float) or labels "
                   "(int64 0/1); target [N] int64 0/1",
                   with_common({{"output", "string", "what input holds", "probabilities",
                                 {"probabilities", "logits", "labels"}},
                                {"positive_rate", "float", "fraction of positive targets (imbalance)", 0.5, {}},
                                kSeparation})});
  specs.push_back({"multiclass",
                   "multiclass classification: input [N, C] logits or probabilities (float) or "
                   "[N] labels (int64); target [N] int64 in [0, C)",
                   with_common({{"num_classes", "int", "number of classes C (>= 2)", nullptr, {}},
                                {"output", "string", "what input holds", "logits",
                                 {"logits", "probabilities", "labels"}},
                                {"class_weights", "float_list",
                                 "relative frequency of each class (imbalance); empty: balanced", json::array(), {}},
                                kSeparation})});
  specs.push_back({"multilabel",
                   "multilabel classification: input [N, L] probabilities or logits (float) or "
                   "labels (int64 0/1); target [N, L] int64 0/1",
                   with_common({{"num_labels", "int", "number of labels L (>= 1)", nullptr, {}},
                                {"output", "string", "what input holds", "probabilities",
                                 {"probabilities", "logits", "labels"}},
                                {"positive_rate", "float", "fraction of positive targets", 0.3, {}},
                                kSeparation})});
  specs.push_back({"regression",
                   "regression: input (prediction) and target [N] (dims = 0) or [N, dims], float; "
                   "target = offset + scale * normal, input = target + noise * normal",
                   with_common({{"dims", "int", "features per sample; 0 gives shape [N]", 0, {}},
                                {"offset", "float", "mean of the target", 0.0, {}},
                                {"scale", "float", "standard deviation of the target", 1.0, {}},
                                {"noise", "float", "standard deviation of the prediction error", 0.5, {}},
                                {"outliers", "float", "fraction of samples whose error is ten times larger", 0.0, {}}})});
  specs.push_back({"segmentation",
                   "segmentation masks: input [N, C, H, W] logits or probabilities (float) or "
                   "[N, H, W] labels (int64); target [N, H, W] int64 in [0, C)",
                   with_common({{"num_classes", "int", "number of classes C (>= 2)", nullptr, {}},
                                {"height", "int", "mask height", 8, {}},
                                {"width", "int", "mask width", 8, {}},
                                {"output", "string", "what input holds", "logits",
                                 {"logits", "probabilities", "labels"}},
                                {"class_weights", "float_list", "relative frequency of each class", json::array(), {}},
                                kSeparation})});
  specs.push_back({"scores",
                   "ranking scores: input [N] float scores (or probabilities), target [N] int64 "
                   "relevance 0/1; positives score higher on average",
                   with_common({{"output", "string", "what input holds", "scores", {"scores", "probabilities"}},
                                {"positive_rate", "float", "fraction of relevant samples", 0.3, {}},
                                {"separation", "float", "mean score gap between positives and negatives", 1.0, {}},
                                {"ties", "bool", "round scores to a coarse grid so that many tie", false, {}}})});
  specs.push_back({"values",
                   "values such as per-sample losses: input [N] (dims = 0) or [N, dims] float, no target",
                   with_common({{"distribution", "string", "how values are drawn", "uniform",
                                 {"uniform", "normal", "exponential", "integers"}},
                                {"low", "float", "uniform/integers: smallest value", 0.0, {}},
                                {"high", "float", "uniform/integers: largest value", 1.0, {}},
                                {"mean", "float", "normal: mean", 0.0, {}},
                                {"scale", "float", "normal: standard deviation; exponential: mean", 1.0, {}},
                                {"dims", "int", "values per sample; 0 gives shape [N]", 0, {}}})});
  specs.push_back({"images",
                   "images: input and target [N, C, H, W] float in [0, data_range]; input = target "
                   "plus clipped noise",
                   with_common({{"channels", "int", "channels C", 3, {}},
                                {"height", "int", "image height", 8, {}},
                                {"width", "int", "image width", 8, {}},
                                {"data_range", "float", "largest pixel value", 1.0, {}},
                                {"noise", "float", "noise standard deviation, as a fraction of data_range", 0.1, {}}})});
  return specs;
}

void require(bool ok, const std::string& field, const std::string& message) {
  if (!ok) throw runtime::FieldError(field, message);
}

// Range checks beyond types and choices.
void check_ranges(const std::string& generator, const json& p) {
  const std::string owner = "generator '" + generator + "'";
  auto in_range = [&](const char* name, double lo, double hi) {
    if (!p.contains(name)) return;
    const double v = p.at(name).get<double>();
    require(std::isfinite(v) && v >= lo && v <= hi, name,
            owner + " parameter '" + name + "' must be in [" + json(lo).dump() + ", " + json(hi).dump() +
                "], got " + p.at(name).dump());
  };
  in_range("num_classes", 2, 1000);
  in_range("num_labels", 1, 1000);
  in_range("positive_rate", 0, 1);
  in_range("outliers", 0, 1);
  in_range("dims", 0, 64);
  in_range("height", 1, 256);
  in_range("width", 1, 256);
  in_range("channels", 1, 16);
  in_range("noise", 0, 1e6);
  in_range("scale", 0, 1e12);
  in_range("data_range", 1e-12, 1e12);
  in_range("separation", -1e6, 1e6);
  if (p.contains("class_weights")) {
    const auto& w = p.at("class_weights");
    if (!w.empty()) {
      require(static_cast<std::int64_t>(w.size()) == p.at("num_classes").get<std::int64_t>(), "class_weights",
              owner + ": class_weights has " + std::to_string(w.size()) + " entries but num_classes is " +
                  p.at("num_classes").dump());
      double total = 0;
      for (const auto& x : w) {
        require(x.get<double>() >= 0 && std::isfinite(x.get<double>()), "class_weights",
                owner + ": class_weights must be finite and >= 0, got " + x.dump());
        total += x.get<double>();
      }
      require(total > 0, "class_weights", owner + ": class_weights must not all be 0");
    }
  }
  if (generator == "values") {
    const auto& dist = p.at("distribution").get_ref<const std::string&>();
    if (dist == "uniform" || dist == "integers")
      require(p.at("high").get<double>() >= p.at("low").get<double>(), "high",
              owner + ": high (" + p.at("high").dump() + ") must be >= low (" + p.at("low").dump() + ")");
  }
  require(p.at("weight_high").get<double>() >= p.at("weight_low").get<double>(), "weight_high",
          owner + ": weight_high must be >= weight_low");
  require(std::isfinite(p.at("weight_low").get<double>()) && std::isfinite(p.at("weight_high").get<double>()),
          "weight_low", owner + ": weights must be finite");
}

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

// Turns per-sample score rows (n rows of k logits) into what `output` asks for.
struct Scores {
  std::vector<double> logits;  // n * k
  std::int64_t n, k;
};

// Multiclass-style outputs: softmax probabilities, or argmax labels.
at::Tensor class_output(const Scores& s, const std::string& output, std::vector<std::int64_t> shape,
                        std::vector<std::int64_t> label_shape, at::ScalarType type) {
  if (output == "logits") return float_tensor(s.logits, shape, type);
  if (output == "probabilities") {
    std::vector<double> probs(s.logits.size());
    for (std::int64_t i = 0; i < s.n; ++i) {
      const double* row = &s.logits[i * s.k];
      const double top = *std::max_element(row, row + s.k);
      double total = 0;
      for (std::int64_t j = 0; j < s.k; ++j) total += probs[i * s.k + j] = std::exp(row[j] - top);
      for (std::int64_t j = 0; j < s.k; ++j) probs[i * s.k + j] /= total;
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

// Element-wise outputs (binary, multilabel): sigmoid probabilities, or 0/1 labels.
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

// Each generator makes the rows `rows` (global sample indices, in that order) of its data: sample
// i's numbers come from counters of i only (i * per + j for its j-th number), so a row made alone
// is the same row, to the bit, as in the whole data set.
using Rows = std::vector<std::int64_t>;

std::int64_t count_of(const Rows& rows) { return static_cast<std::int64_t>(rows.size()); }

void generate_binary(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream);
  const double rate = p.at("positive_rate"), sep = p.at("separation");
  const std::int64_t n = count_of(rows);
  std::vector<std::int64_t> t(n);
  std::vector<double> logits(n);
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = rows[r];
    t[r] = target.uniform(i) < rate ? 1 : 0;
    logits[r] = sep * (2.0 * t[r] - 1.0) + noise.normal(i);
  }
  out.input = elementwise_output(logits, p.at("output"), {n}, float_type(d.dtype));
  out.target = long_tensor(t, {n});
}

void generate_multiclass(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::int64_t c = p.at("num_classes");
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream);
  const auto cdf = class_cdf(p.at("class_weights"), c);
  const double sep = p.at("separation");
  const std::int64_t n = count_of(rows);
  std::vector<std::int64_t> t(n);
  Scores s{std::vector<double>(n * c), n, c};
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = rows[r];
    t[r] = draw_class(cdf, target.uniform(i));
    for (std::int64_t j = 0; j < c; ++j) s.logits[r * c + j] = noise.normal(i * c + j) + (j == t[r] ? sep : 0.0);
  }
  out.input = class_output(s, p.at("output"), {n, c}, {n}, float_type(d.dtype));
  out.target = long_tensor(t, {n});
}

void generate_multilabel(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::int64_t l = p.at("num_labels");
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream);
  const double rate = p.at("positive_rate"), sep = p.at("separation");
  const std::int64_t n = count_of(rows);
  std::vector<std::int64_t> t(n * l);
  std::vector<double> logits(n * l);
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t j = 0; j < l; ++j) {
      const std::int64_t k = rows[r] * l + j, at = r * l + j;
      t[at] = target.uniform(k) < rate ? 1 : 0;
      logits[at] = sep * (2.0 * t[at] - 1.0) + noise.normal(k);
    }
  }
  out.input = elementwise_output(logits, p.at("output"), {n, l}, float_type(d.dtype));
  out.target = long_tensor(t, {n, l});
}

std::vector<std::int64_t> row_shape(std::int64_t n, std::int64_t dims) {
  return dims == 0 ? std::vector<std::int64_t>{n} : std::vector<std::int64_t>{n, dims};
}

void generate_regression(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::int64_t dims = p.at("dims"), per = std::max<std::int64_t>(dims, 1);
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream), outlier(d.seed, kOutlierStream);
  const double offset = p.at("offset"), scale = p.at("scale"), err = p.at("noise"), outliers = p.at("outliers");
  const std::int64_t n = count_of(rows);
  std::vector<double> y(n * per), yhat(n * per);
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = rows[r];
    const double factor = outlier.uniform(i) < outliers ? 10.0 : 1.0;
    for (std::int64_t j = 0; j < per; ++j) {
      const std::int64_t k = i * per + j, at = r * per + j;
      y[at] = offset + scale * target.normal(k);
      yhat[at] = y[at] + factor * err * noise.normal(k);
    }
  }
  out.input = float_tensor(yhat, row_shape(n, dims), float_type(d.dtype));
  out.target = float_tensor(y, row_shape(n, dims), float_type(d.dtype));
}

void generate_segmentation(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::int64_t c = p.at("num_classes"), h = p.at("height"), w = p.at("width"), hw = h * w;
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream);
  const auto cdf = class_cdf(p.at("class_weights"), c);
  const double sep = p.at("separation");
  const std::int64_t n = count_of(rows);
  std::vector<std::int64_t> t(n * hw);
  // Pixel-major scores (sample, pixel, class), transposed to [N, C, H, W] below.
  Scores s{std::vector<double>(n * hw * c), n * hw, c};
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t q = 0; q < hw; ++q) {
      const std::int64_t k = rows[r] * hw + q, at = r * hw + q;
      t[at] = draw_class(cdf, target.uniform(k));
      for (std::int64_t j = 0; j < c; ++j) s.logits[at * c + j] = noise.normal(k * c + j) + (j == t[at] ? sep : 0.0);
    }
  }
  const std::string output = p.at("output");
  auto input = class_output(s, output, {n, h, w, c}, {n, h, w}, float_type(d.dtype));
  out.input = output == "labels" ? input : input.permute({0, 3, 1, 2}).contiguous();
  out.target = long_tensor(t, {n, h, w});
}

void generate_scores(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream);
  const double rate = p.at("positive_rate"), sep = p.at("separation");
  const bool probabilities = p.at("output") == "probabilities", ties = p.at("ties");
  const std::int64_t n = count_of(rows);
  std::vector<std::int64_t> t(n);
  std::vector<double> s(n);
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = rows[r];
    t[r] = target.uniform(i) < rate ? 1 : 0;
    s[r] = sep * t[r] + noise.normal(i);
    if (probabilities) s[r] = sigmoid(s[r]);
    if (ties) s[r] = std::round(s[r] * (probabilities ? 10.0 : 2.0)) / (probabilities ? 10.0 : 2.0);
  }
  out.input = float_tensor(s, {n}, float_type(d.dtype));
  out.target = long_tensor(t, {n});
}

void generate_values(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::int64_t dims = p.at("dims"), per = std::max<std::int64_t>(dims, 1);
  const CounterRng draw(d.seed, kTargetStream);
  const std::string dist = p.at("distribution");
  const double low = p.at("low"), high = p.at("high"), mean = p.at("mean"), scale = p.at("scale");
  const std::int64_t n = count_of(rows);
  std::vector<double> v(n * per);
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t j = 0; j < per; ++j) {
      const std::int64_t k = rows[r] * per + j, at = r * per + j;
      if (dist == "uniform") v[at] = low + (high - low) * draw.uniform(k);
      else if (dist == "normal") v[at] = mean + scale * draw.normal(k);
      else if (dist == "exponential") v[at] = -scale * std::log(draw.uniform(k));
      else {
        const double lo = std::ceil(low), span = std::floor(high) - lo + 1;
        v[at] = lo + static_cast<double>(draw.below(k, static_cast<std::uint64_t>(std::max(span, 1.0))));
      }
    }
  }
  out.input = float_tensor(v, row_shape(n, dims), float_type(d.dtype));
}

void generate_images(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::int64_t c = p.at("channels"), h = p.at("height"), w = p.at("width"), per = c * h * w;
  const CounterRng target(d.seed, kTargetStream), noise(d.seed, kNoiseStream);
  const double range = p.at("data_range"), err = p.at("noise");
  const std::int64_t n = count_of(rows);
  std::vector<double> y(n * per), yhat(n * per);
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t j = 0; j < per; ++j) {
      const std::int64_t k = rows[r] * per + j, at = r * per + j;
      y[at] = range * target.uniform(k);
      yhat[at] = std::clamp(y[at] + err * range * noise.normal(k), 0.0, range);
    }
  }
  out.input = float_tensor(yhat, {n, c, h, w}, float_type(d.dtype));
  out.target = float_tensor(y, {n, c, h, w}, float_type(d.dtype));
}

void generate_weights(const DataSpec& d, const Rows& rows, Dataset& out) {
  const auto& p = d.params;
  const std::string kind = p.at("weights");
  if (kind == "none") return;
  const CounterRng draw(d.seed, kWeightStream);
  const double low = p.at("weight_low"), high = p.at("weight_high");
  const std::int64_t n = count_of(rows);
  std::vector<double> w(n);
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = rows[r];
    if (kind == "uniform") {
      w[r] = low + (high - low) * draw.uniform(i);
    } else {
      const double lo = std::ceil(low), span = std::floor(high) - lo + 1;
      w[r] = lo + static_cast<double>(draw.below(i, static_cast<std::uint64_t>(std::max(span, 1.0))));
    }
  }
  out.weight = float_tensor(w, {n}, float_type(d.dtype));
}

using RowGenerator = void (*)(const DataSpec&, const Rows&, Dataset&);

const std::map<std::string, RowGenerator>& generator_functions() {
  static const std::map<std::string, RowGenerator> fns = {
      {"binary", generate_binary},         {"multiclass", generate_multiclass},
      {"multilabel", generate_multilabel}, {"regression", generate_regression},
      {"segmentation", generate_segmentation}, {"scores", generate_scores},
      {"values", generate_values},         {"images", generate_images}};
  return fns;
}

RowGenerator generator_of(const DataSpec& spec) {
  const auto& fns = generator_functions();
  const auto fn = fns.find(spec.generator);
  if (fn == fns.end()) throw std::invalid_argument("unknown data generator '" + spec.generator + "'");
  return fn->second;
}

// The rows of a generator's data, in the generated dtypes (no input dtype applied).
Dataset generated_rows(const DataSpec& spec, const Rows& rows) {
  Dataset out;
  generator_of(spec)(spec, rows, out);
  generate_weights(spec, rows, out);
  return out;
}

Rows first_rows(std::int64_t begin, std::int64_t end) {
  Rows rows(static_cast<std::size_t>(std::max<std::int64_t>(end - begin, 0)));
  for (std::size_t r = 0; r < rows.size(); ++r) rows[r] = begin + static_cast<std::int64_t>(r);
  return rows;
}

// Sort keys of lazy data are made this many rows at a time.
constexpr std::int64_t kSortKeyChunk = 1 << 16;

}  // namespace

// The label-skew key: the mean of the sample's target row (its class for single-label data),
// or of its input row when there is no target.
std::vector<double> label_sort_keys(const Dataset& data, std::int64_t n) {
  if (n == 0) return {};
  const auto& source = data.target.defined() ? data.target : data.input;
  auto rows = source.reshape({n, -1}).to(at::kDouble).mean(1).contiguous();
  std::vector<double> keys(n);
  if (n > 0) std::memcpy(keys.data(), rows.data_ptr<double>(), n * sizeof(double));
  return keys;
}

const std::vector<GeneratorSpec>& data_generators() {
  static const std::vector<GeneratorSpec> specs = make_specs();
  return specs;
}

const GeneratorSpec* find_generator(const std::string& name) {
  for (const auto& spec : data_generators())
    if (spec.name == name) return &spec;
  return nullptr;
}

std::vector<std::string> generator_names() {
  std::vector<std::string> names;
  for (const auto& spec : data_generators()) names.push_back(spec.name);
  return names;
}

json resolve_generator_params(const std::string& generator, const json& params) {
  const auto* spec = find_generator(generator);
  if (!spec)
    throw runtime::FieldError("", "unknown data generator '" + generator + "'" + runtime::did_you_mean(generator, generator_names()) +
                             " (known: " + runtime::quoted_list(generator_names()) + ")");
  auto resolved = runtime::resolve_declared_params("generator '" + generator + "'", spec->params, params);
  check_ranges(generator, resolved);
  return resolved;
}

json DataSpec::to_json() const {
  return {{"generator", generator}, {"params", params}, {"seed", seed}, {"num_samples", num_samples},
          {"dtype", dtype},         {"file", file},     {"python", python}, {"structured", structured}};
}

std::string DataSpec::source_text() const {
  if (!python.empty()) return "Python generator '" + python + "'";
  if (!file.empty()) return "file '" + file + "'";
  return "generator '" + generator + "'";
}

DataSpec DataSpec::from_json(const json& j) {
  DataSpec d;
  d.generator = j.at("generator");
  d.params = j.at("params");
  d.seed = j.at("seed");
  d.num_samples = j.at("num_samples");
  d.dtype = j.at("dtype");
  d.file = j.value("file", "");
  d.python = j.value("python", "");
  d.structured = j.value("structured", false);
  return d;
}

std::int64_t generator_elements_per_sample(const std::string& generator, const json& p) {
  auto get = [&](const char* k, std::int64_t fallback) {
    return p.contains(k) && p.at(k).is_number_integer() ? std::max<std::int64_t>(p.at(k).get<std::int64_t>(), 1)
                                                        : fallback;
  };
  if (generator == "multiclass") return get("num_classes", 2) + 1;
  if (generator == "multilabel") return 2 * get("num_labels", 1);
  if (generator == "segmentation") return (get("num_classes", 2) + 1) * get("height", 8) * get("width", 8);
  if (generator == "images") return 2 * get("channels", 3) * get("height", 8) * get("width", 8);
  return 2 * std::max<std::int64_t>(get("dims", 1), 1) + 1;
}

bool generated_lazily(const DataSpec& spec) {
  if (spec.generator.empty() || !spec.file.empty() || !spec.python.empty() || spec.structured) return false;
  const std::int64_t per = generator_elements_per_sample(spec.generator, spec.params);
  return spec.num_samples > kWholeDataElements / std::max<std::int64_t>(per, 1);
}

Dataset generate_whole_data(const DataSpec& spec) {
  Dataset out = generated_rows(spec, first_rows(0, spec.num_samples));
  out.sort_key = label_sort_keys(out, spec.num_samples);
  return out;
}

Dataset generate_lazy_data(const DataSpec& spec) {
  generator_of(spec);  // an unknown generator fails here, as it does for whole data
  Dataset out;
  out.lazy = std::make_shared<const DataSpec>(spec);
  return out;
}

Dataset generate_data(const DataSpec& spec) {
  if (spec.structured) {  // the Python side reads the samples; here each is its index
    if (spec.file.empty() || spec.num_samples < 0)
      throw std::invalid_argument("the structured data of " + spec.source_text() + " were not made before the variant ran");
    Dataset out;
    out.input = at::arange(spec.num_samples, at::TensorOptions().dtype(at::kLong));
    out.sort_key.resize(static_cast<std::size_t>(spec.num_samples));
    for (std::size_t i = 0; i < out.sort_key.size(); ++i) out.sort_key[i] = static_cast<double>(i);
    out.structured_file = spec.file;
    return out;
  }
  if (!spec.file.empty()) return load_data_file(spec);
  if (!spec.python.empty())  // the supervisor writes a Python generator's data to a file before any rank runs
    throw std::invalid_argument("the data of " + spec.source_text() + " were not made before the variant ran");
  return generated_lazily(spec) ? generate_lazy_data(spec) : generate_whole_data(spec);
}

std::int64_t Dataset::size() const {
  if (lazy) return lazy->num_samples;
  return static_cast<std::int64_t>(sort_key.size());
}

metrics::Batch Dataset::rows(const std::vector<std::int64_t>& indices) const {
  metrics::Batch batch;
  if (lazy) {
    const std::int64_t n = lazy->num_samples;
    for (const auto i : indices)
      if (i < 0 || i >= n)
        throw std::out_of_range("row " + std::to_string(i) + " asked of " + lazy->source_text() + ", which has " +
                                std::to_string(n) + " samples");
    const Dataset made = generated_rows(*lazy, indices);
    batch.input = to_input_dtype(made.input, lazy_dtype, lazy_round_back);
    batch.target = to_input_dtype(made.target, lazy_dtype, lazy_round_back);
    batch.weight = to_input_dtype(made.weight, lazy_dtype, lazy_round_back);
    return batch;
  }
  const auto index = long_tensor(indices, {static_cast<std::int64_t>(indices.size())});
  batch.input = input.index_select(0, index);
  if (target.defined()) batch.target = target.index_select(0, index);
  if (weight.defined()) batch.weight = weight.index_select(0, index);
  batch.structured_file = structured_file;
  return batch;
}

std::vector<double> Dataset::sort_keys() const {
  if (!lazy) return sort_key;
  std::vector<double> keys;
  keys.reserve(static_cast<std::size_t>(lazy->num_samples));
  for (std::int64_t begin = 0; begin < lazy->num_samples; begin += kSortKeyChunk) {
    const std::int64_t end = std::min(lazy->num_samples, begin + kSortKeyChunk);
    const auto chunk = label_sort_keys(generated_rows(*lazy, first_rows(begin, end)), end - begin);
    keys.insert(keys.end(), chunk.begin(), chunk.end());
  }
  return keys;
}

void Dataset::require_whole(const std::string& field) const {
  if (!lazy) return;
  throw std::invalid_argument(
      field + " needs the whole data at once, and the " + std::to_string(lazy->num_samples) + " samples of " +
      lazy->source_text() + " (data.num_samples) are generated batch by batch: they hold about " +
      std::to_string(lazy->num_samples * generator_elements_per_sample(lazy->generator, lazy->params)) +
      " numbers, more than the " + std::to_string(kWholeDataElements) +
      " held whole; use fewer samples (or smaller ones) for " + field);
}

}  // namespace distmetrics::harness
