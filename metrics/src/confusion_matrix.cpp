#include "distmetrics/metrics/confusion_matrix.h"

#include <ATen/ATen.h>

#include "classification_inputs.h"
#include "distmetrics/metrics/errors.h"
#include "distmetrics/metrics/input_checks.h"
#include "reference_metrics.h"
#include "tensor_numbers.h"

namespace distmetrics::metrics {
namespace {

using detail::divide_or;

void check_zero_division(const std::string& metric, double zero_division) {
  if (!(zero_division == 0.0 || zero_division == 1.0)) {
    throw InputError(metric, "zero_division", "0 or 1", checks::number_string(zero_division));
  }
}

Value averaged(const at::Tensor& per_class, ClassAverage average) {
  return average == ClassAverage::Macro ? Value(per_class.mean().item<double>()) : Value(per_class);
}

}  // namespace

ConfusionCounts::ConfusionCounts(std::string name, std::int64_t num_classes)
    : StatefulMetric(std::move(name)), num_classes_(num_classes) {
  detail::check_options(this->name(), {Task::Multiclass, num_classes_, 0.5});
  add_state("matrix", at::zeros({num_classes_, num_classes_}, at::kLong), Reduction::Sum);
}

void ConfusionCounts::update_state(const Batch& batch) {
  const detail::DecodedLabels labels =
      detail::decode_labels(name(), {Task::Multiclass, num_classes_, 0.5}, batch);
  const at::Tensor cells = labels.target * num_classes_ + labels.pred;
  state("matrix") += at::bincount(cells, {}, num_classes_ * num_classes_).view({num_classes_, num_classes_});
}

at::Tensor ConfusionCounts::matrix_of(const StateValues& synced) const {
  const at::Tensor matrix = synced["matrix"].to(at::kCPU);
  if (matrix.sum().item<std::int64_t>() == 0) throw NotComputableError(name(), "no samples on any rank");
  return matrix.to(at::kDouble);
}

// --- ConfusionMatrix ---------------------------------------------------------------------------

ConfusionMatrix::ConfusionMatrix(std::int64_t num_classes, Normalize normalize)
    : ConfusionCounts("ConfusionMatrix", num_classes), normalize_(normalize) {}

ConfusionMatrix::Normalize ConfusionMatrix::parse_normalize(const std::string& metric, const std::string& text) {
  if (text == "none") return Normalize::None;
  if (text == "true") return Normalize::True;
  if (text == "pred") return Normalize::Pred;
  if (text == "all") return Normalize::All;
  throw InputError(metric, "normalize", "one of none, true, pred, all", "\"" + text + "\"");
}

Value ConfusionMatrix::compute_from(const StateValues& synced) const {
  const at::Tensor m = matrix_of(synced);
  switch (normalize_) {
    case Normalize::None: return Value(m.to(at::kLong));
    case Normalize::True: return Value(divide_or(m, m.sum(1, /*keepdim=*/true).expand_as(m), 0.0));
    case Normalize::Pred: return Value(divide_or(m, m.sum(0, /*keepdim=*/true).expand_as(m), 0.0));
    case Normalize::All: return Value(m / m.sum());
  }
  throw std::logic_error("ConfusionMatrix: unknown normalize");
}

// --- IoU, MeanIoU, Dice ------------------------------------------------------------------------

ClassAverage parse_class_average(const std::string& metric, const std::string& text) {
  if (text == "none") return ClassAverage::None;
  if (text == "macro") return ClassAverage::Macro;
  throw InputError(metric, "average", "one of none, macro", "\"" + text + "\"");
}

IoU::IoU(std::int64_t num_classes, ClassAverage average, double zero_division)
    : IoU("IoU", num_classes, average, zero_division) {}

IoU::IoU(std::string name, std::int64_t num_classes, ClassAverage average, double zero_division)
    : ConfusionCounts(std::move(name), num_classes), average_(average), zero_division_(zero_division) {
  check_zero_division(this->name(), zero_division_);
}

Value IoU::compute_from(const StateValues& synced) const {
  const at::Tensor m = matrix_of(synced);
  const at::Tensor tp = m.diagonal();
  return averaged(divide_or(tp, m.sum(1) + m.sum(0) - tp, zero_division_), average_);
}

MeanIoU::MeanIoU(std::int64_t num_classes, double zero_division)
    : IoU("MeanIoU", num_classes, ClassAverage::Macro, zero_division) {}

Dice::Dice(std::int64_t num_classes, ClassAverage average, double zero_division)
    : ConfusionCounts("Dice", num_classes), average_(average), zero_division_(zero_division) {
  check_zero_division(name(), zero_division_);
}

Value Dice::compute_from(const StateValues& synced) const {
  const at::Tensor m = matrix_of(synced);
  const at::Tensor tp = m.diagonal();
  return averaged(divide_or(2.0 * tp, m.sum(1) + m.sum(0), zero_division_), average_);
}

// --- CohenKappa --------------------------------------------------------------------------------

CohenKappa::CohenKappa(std::int64_t num_classes, Weights weights)
    : ConfusionCounts("CohenKappa", num_classes), weights_(weights) {}

CohenKappa::Weights CohenKappa::parse_weights(const std::string& metric, const std::string& text) {
  if (text == "none") return Weights::None;
  if (text == "linear") return Weights::Linear;
  if (text == "quadratic") return Weights::Quadratic;
  throw InputError(metric, "weights", "one of none, linear, quadratic", "\"" + text + "\"");
}

Value CohenKappa::compute_from(const StateValues& synced) const {
  const at::Tensor m = matrix_of(synced);
  const std::int64_t c = num_classes();
  // Agreement expected by chance: outer product of the marginals over the total.
  const at::Tensor expected = at::outer(m.sum(1), m.sum(0)) / m.sum();
  const at::Tensor index = at::arange(c, at::kDouble);
  const at::Tensor distance = index.unsqueeze(1) - index.unsqueeze(0);
  at::Tensor w;
  switch (weights_) {
    case Weights::None: w = at::ones({c, c}, at::kDouble) - at::eye(c, at::kDouble); break;
    case Weights::Linear: w = distance.abs(); break;
    case Weights::Quadratic: w = distance * distance; break;
  }
  return 1.0 - (w * m).sum().item<double>() / (w * expected).sum().item<double>();
}

}  // namespace distmetrics::metrics

// --- Registration in the reference registry (registry.h), next to the classes ------------

namespace distmetrics::metrics::detail {

void register_confusion_matrix(MetricRegistry& registry) {
  const std::string cm_batch =
      "; input scores [N,C,*] or labels [N,*], target labels [N,*] in [0,C) (every element a sample)";
  auto classes = [] { return param("num_classes", "int", nullptr, "number of classes C, >= 2"); };
  auto class_average = [](const char* fallback) {
    return param("average", "string", fallback, "none (a tensor of per-class values) or macro (their mean over all classes)",
                 {"none", "macro"});
  };
  auto zero_division = [] { return param("zero_division", "float", 0.0, "value (0 or 1) for a class never true nor predicted"); };
  registry.add({"ConfusionMatrix", "classification", "[C, C] counts, rows true class, columns predicted" + cm_batch,
                {classes(), param("normalize", "string", "none",
                                  "none (int64 counts), true (rows sum to 1), pred (columns sum to 1), all (total 1)",
                                  {"none", "true", "pred", "all"})},
                [](const nlohmann::json& p) {
                  return std::make_unique<ConfusionMatrix>(
                      p.at("num_classes").get<std::int64_t>(),
                      ConfusionMatrix::parse_normalize("ConfusionMatrix", p.at("normalize").get<std::string>()));
                }});
  registry.add({"IoU", "classification", "intersection over union per class, tp/(tp+fp+fn)" + cm_batch,
                {classes(), class_average("none"), zero_division()},
                [](const nlohmann::json& p) {
                  return std::make_unique<IoU>(p.at("num_classes").get<std::int64_t>(),
                                               parse_class_average("IoU", p.at("average").get<std::string>()),
                                               p.at("zero_division").get<double>());
                }});
  registry.add({"MeanIoU", "classification", "mIoU: IoU averaged over all classes" + cm_batch,
                {classes(), zero_division()},
                [](const nlohmann::json& p) {
                  return std::make_unique<MeanIoU>(p.at("num_classes").get<std::int64_t>(), p.at("zero_division").get<double>());
                }});
  registry.add({"Dice", "classification", "Dice per class, 2tp/(2tp+fp+fn), averaged" + cm_batch,
                {classes(), class_average("macro"), zero_division()},
                [](const nlohmann::json& p) {
                  return std::make_unique<Dice>(p.at("num_classes").get<std::int64_t>(),
                                                parse_class_average("Dice", p.at("average").get<std::string>()),
                                                p.at("zero_division").get<double>());
                }});
  registry.add({"CohenKappa", "classification", "Cohen's kappa between targets and predictions" + cm_batch,
                {classes(), param("weights", "string", "none", "disagreement weights: none, linear or quadratic",
                                  {"none", "linear", "quadratic"})},
                [](const nlohmann::json& p) {
                  return std::make_unique<CohenKappa>(p.at("num_classes").get<std::int64_t>(),
                                                      CohenKappa::parse_weights("CohenKappa", p.at("weights").get<std::string>()));
                }});
}

}  // namespace distmetrics::metrics::detail
