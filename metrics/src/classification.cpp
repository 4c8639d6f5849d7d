#include "distmetrics/metrics/classification.h"

#include <ATen/ATen.h>

#include "classification_inputs.h"
#include "distmetrics/metrics/errors.h"
#include "distmetrics/metrics/input_checks.h"
#include "reference_metrics.h"
#include "tensor_numbers.h"

namespace distmetrics::metrics {
namespace {

using detail::count_of;
using detail::divide_or;
using detail::zero_count;

}  // namespace

const char* to_string(Task task) {
  switch (task) {
    case Task::Binary: return "binary";
    case Task::Multiclass: return "multiclass";
    case Task::Multilabel: return "multilabel";
  }
  return "?";
}

Task parse_task(const std::string& metric, const std::string& text) {
  if (text == "binary") return Task::Binary;
  if (text == "multiclass") return Task::Multiclass;
  if (text == "multilabel") return Task::Multilabel;
  throw InputError(metric, "task", "one of binary, multiclass, multilabel", "\"" + text + "\"");
}

const char* to_string(Average average) {
  switch (average) {
    case Average::None: return "none";
    case Average::Micro: return "micro";
    case Average::Macro: return "macro";
    case Average::Weighted: return "weighted";
  }
  return "?";
}

Average parse_average(const std::string& metric, const std::string& text) {
  if (text == "none") return Average::None;
  if (text == "micro") return Average::Micro;
  if (text == "macro") return Average::Macro;
  if (text == "weighted") return Average::Weighted;
  throw InputError(metric, "average", "one of none, micro, macro, weighted", "\"" + text + "\"");
}

// --- Accuracy ---------------------------------------------------------------------------------

Accuracy::Accuracy(ClassificationOptions options, std::int64_t top_k)
    : Accuracy("Accuracy", options, top_k) {}

Accuracy::Accuracy(std::string name, ClassificationOptions options, std::int64_t top_k)
    : StatefulMetric(std::move(name)), options_(options), top_k_(top_k) {
  detail::check_options(this->name(), options_);
  if (top_k_ < 1) throw InputError(this->name(), "top_k", "at least 1", std::to_string(top_k_));
  if (top_k_ > 1 && options_.task != Task::Multiclass) {
    throw InputError(this->name(), "top_k", std::string("1 for task ") + to_string(options_.task) +
                     " (top-k needs class scores)", std::to_string(top_k_));
  }
  if (top_k_ > 1 && top_k_ > options_.num_classes) {
    throw InputError(this->name(), "top_k", "at most num_classes = " + std::to_string(options_.num_classes),
                     std::to_string(top_k_));
  }
  add_state("correct", zero_count(), Reduction::Sum);
  add_state("total", zero_count(), Reduction::Sum);
}

void Accuracy::update_state(const Batch& batch) {
  const detail::DecodedLabels labels = detail::decode_labels(name(), options_, batch);
  at::Tensor correct;
  if (options_.task == Task::Multilabel) {
    correct = labels.pred.eq(labels.target).all(1);
  } else if (top_k_ > 1) {
    if (!labels.scores.defined()) {
      throw InputError(name(), "input", "class scores shaped [N, " + std::to_string(options_.num_classes) +
                       ", *] (top_k = " + std::to_string(top_k_) + " needs scores, not labels)",
                       checks::describe(batch.input));
    }
    // The target's rank: classes scoring higher, plus equal-scoring classes with a lower index.
    const at::Tensor target = labels.target.unsqueeze(1);
    const at::Tensor target_score = labels.scores.gather(1, target);
    const at::Tensor index = at::arange(options_.num_classes, target.options()).unsqueeze(0);
    const at::Tensor rank = labels.scores.gt(target_score).sum(1) +
                            labels.scores.eq(target_score).logical_and(index.lt(target)).sum(1);
    correct = rank.lt(top_k_);
  } else {
    correct = labels.pred.eq(labels.target);
  }
  state("correct") += correct.sum();
  state("total") += correct.numel();
}

Value Accuracy::compute_from(const StateValues& synced) const {
  const std::int64_t total = count_of(synced["total"]);
  if (total == 0) throw NotComputableError(name(), "no samples on any rank");
  return static_cast<double>(count_of(synced["correct"])) / static_cast<double>(total);
}

TopKCategoricalAccuracy::TopKCategoricalAccuracy(std::int64_t k, std::int64_t num_classes)
    : Accuracy("TopKCategoricalAccuracy", ClassificationOptions{Task::Multiclass, num_classes, 0.5}, k) {}

// --- Precision, Recall, Fbeta ------------------------------------------------------------------

ClassCountsMetric::ClassCountsMetric(std::string name, Kind kind, ClassificationOptions options,
                                     Average average, double zero_division, double beta)
    : StatefulMetric(std::move(name)),
      kind_(kind),
      options_(options),
      average_(average),
      zero_division_(zero_division),
      beta_(beta) {
  detail::check_options(this->name(), options_);
  if (!(zero_division_ == 0.0 || zero_division_ == 1.0)) {
    throw InputError(this->name(), "zero_division", "0 or 1", checks::number_string(zero_division_));
  }
  if (kind_ == Kind::Fbeta && !(beta_ > 0.0)) {
    throw InputError(this->name(), "beta", "a number > 0", checks::number_string(beta_));
  }
  const std::int64_t k = options_.task == Task::Binary ? 1 : options_.num_classes;
  add_state("true_positives", zero_count(k), Reduction::Sum);
  add_state("predicted", zero_count(k), Reduction::Sum);
  add_state("actual", zero_count(k), Reduction::Sum);
  add_state("samples", zero_count(), Reduction::Sum);
}

void ClassCountsMetric::update_state(const Batch& batch) {
  const detail::DecodedLabels labels = detail::decode_labels(name(), options_, batch);
  at::Tensor tp, predicted, actual;
  std::int64_t samples = 0;
  switch (options_.task) {
    case Task::Binary:
      tp = labels.pred.mul(labels.target).sum().view({1});
      predicted = labels.pred.sum().view({1});
      actual = labels.target.sum().view({1});
      samples = labels.target.numel();
      break;
    case Task::Multiclass: {
      const std::int64_t c = options_.num_classes;
      tp = at::bincount(labels.target.masked_select(labels.pred.eq(labels.target)), {}, c);
      predicted = at::bincount(labels.pred, {}, c);
      actual = at::bincount(labels.target, {}, c);
      samples = labels.target.numel();
      break;
    }
    case Task::Multilabel:
      tp = labels.pred.mul(labels.target).sum(0);
      predicted = labels.pred.sum(0);
      actual = labels.target.sum(0);
      samples = labels.target.size(0);
      break;
  }
  state("true_positives") += tp;
  state("predicted") += predicted;
  state("actual") += actual;
  state("samples") += samples;
}

Value ClassCountsMetric::compute_from(const StateValues& synced) const {
  if (count_of(synced["samples"]) == 0) throw NotComputableError(name(), "no samples on any rank");
  const at::Tensor tp = synced["true_positives"].to(at::kCPU, at::kDouble);
  const at::Tensor predicted = synced["predicted"].to(at::kCPU, at::kDouble);
  const at::Tensor actual = synced["actual"].to(at::kCPU, at::kDouble);

  const double b2 = beta_ * beta_;
  auto value_of = [&](const at::Tensor& tp_, const at::Tensor& predicted_, const at::Tensor& actual_) {
    const at::Tensor precision = divide_or(tp_, predicted_, zero_division_);
    const at::Tensor recall = divide_or(tp_, actual_, zero_division_);
    switch (kind_) {
      case Kind::Precision: return precision;
      case Kind::Recall: return recall;
      case Kind::Fbeta: break;
    }
    const at::Tensor denominator = b2 * precision + recall;
    return divide_or((1.0 + b2) * precision * recall, denominator, 0.0);
  };

  if (options_.task == Task::Binary) return value_of(tp, predicted, actual).item<double>();
  switch (average_) {
    case Average::None: return Value(value_of(tp, predicted, actual));
    case Average::Micro: return value_of(tp.sum(), predicted.sum(), actual.sum()).item<double>();
    case Average::Macro: return value_of(tp, predicted, actual).mean().item<double>();
    case Average::Weighted: {
      const double support = actual.sum().item<double>();
      if (support == 0.0) {  // no positive target anywhere (multilabel): scikit-learn's convention
        if (predicted.sum().item<double>() == 0.0) return zero_division_;
        return kind_ == Kind::Recall ? zero_division_ : 0.0;
      }
      return (value_of(tp, predicted, actual) * actual).sum().item<double>() / support;
    }
  }
  throw std::logic_error("ClassCountsMetric: unknown average");
}

Precision::Precision(ClassificationOptions options, Average average, double zero_division)
    : ClassCountsMetric("Precision", Kind::Precision, options, average, zero_division, 1.0) {}

Recall::Recall(ClassificationOptions options, Average average, double zero_division)
    : ClassCountsMetric("Recall", Kind::Recall, options, average, zero_division, 1.0) {}

Fbeta::Fbeta(ClassificationOptions options, double beta, Average average, double zero_division, std::string name)
    : ClassCountsMetric(std::move(name), Kind::Fbeta, options, average, zero_division, beta) {}

}  // namespace distmetrics::metrics

// --- Registration in the reference registry (registry.h), next to the classes ------------

namespace distmetrics::metrics::detail {
namespace {

const char* kBatchDoc =
    "binary: input scores/labels shaped like target [N,*], target labels {0,1}; "
    "multiclass: input scores [N,C,*] or labels [N,*], target labels [N,*] in [0,C); "
    "multilabel: input scores/labels [N,C], target [N,C] in {0,1}";

ParamSpec task_param() {
  return param("task", "string", nullptr, "binary, multiclass or multilabel (see the Batch layout of each)",
               {"binary", "multiclass", "multilabel"});
}
ParamSpec num_classes_param() {
  return param("num_classes", "int", 0, "number of classes (multiclass) or labels (multilabel), >= 2; unused for binary");
}
ParamSpec threshold_param() {
  ParamSpec p = param("threshold", "float", 0.5, "binary/multilabel scores count as positive when score >= threshold");
  p.draws = {0.0, 0.25, 0.5, 0.75, 1.0};  // explore: the ends, and between
  return p;
}
ParamSpec average_param() {
  return param("average", "string", "macro",
               "how per-class values combine: none (a tensor), micro, macro (mean over all classes), "
               "weighted (by support); binary reports the positive class",
               {"none", "micro", "macro", "weighted"});
}
ParamSpec zero_division_param() {
  return param("zero_division", "float", 0.0, "value (0 or 1) for a class whose denominator is 0");
}

ClassificationOptions options_of(const std::string& metric, const nlohmann::json& p) {
  ClassificationOptions o;
  o.task = parse_task(metric, p.at("task").get<std::string>());
  o.num_classes = p.at("num_classes").get<std::int64_t>();
  o.threshold = p.at("threshold").get<double>();
  return o;
}

}  // namespace

void register_classification(MetricRegistry& registry) {
  registry.add({"Accuracy", "classification",
                std::string("fraction of samples classified correctly (multilabel: all labels right); ") + kBatchDoc,
                {task_param(), num_classes_param(), threshold_param(),
                 drawn(param("top_k", "int", 1, "multiclass scores: correct when the target is among the k best"), {1, 2, 3})},
                [](const nlohmann::json& p) {
                  return std::make_unique<Accuracy>(options_of("Accuracy", p), p.at("top_k").get<std::int64_t>());
                }});
  registry.add({"TopKCategoricalAccuracy", "classification",
                "multiclass: fraction of samples whose target is among the k best scores; input scores [N,C,*], "
                "target labels [N,*] in [0,C)",
                {drawn(param("k", "int", 5, "how many of the best-scoring classes count as correct"), {1, 2, 3}),
                 param("num_classes", "int", nullptr, "number of classes C (columns of input), >= k")},
                [](const nlohmann::json& p) {
                  return std::make_unique<TopKCategoricalAccuracy>(p.at("k").get<std::int64_t>(),
                                                                   p.at("num_classes").get<std::int64_t>());
                }});
  registry.add({"Precision", "classification", std::string("tp / (tp + fp), averaged; ") + kBatchDoc,
                {task_param(), num_classes_param(), threshold_param(), average_param(), zero_division_param()},
                [](const nlohmann::json& p) {
                  return std::make_unique<Precision>(options_of("Precision", p),
                                                     parse_average("Precision", p.at("average").get<std::string>()),
                                                     p.at("zero_division").get<double>());
                }});
  registry.add({"Recall", "classification", std::string("tp / (tp + fn), averaged; ") + kBatchDoc,
                {task_param(), num_classes_param(), threshold_param(), average_param(), zero_division_param()},
                [](const nlohmann::json& p) {
                  return std::make_unique<Recall>(options_of("Recall", p), parse_average("Recall", p.at("average").get<std::string>()),
                                                  p.at("zero_division").get<double>());
                }});
  registry.add({"Fbeta", "classification",
                std::string("(1+b^2)PR/(b^2 P+R) per class, averaged; ") + kBatchDoc,
                {task_param(), num_classes_param(), threshold_param(),
                 param("beta", "float", 1.0, "weight of recall against precision, > 0"), average_param(),
                 zero_division_param()},
                [](const nlohmann::json& p) {
                  return std::make_unique<Fbeta>(options_of("Fbeta", p), p.at("beta").get<double>(),
                                                 parse_average("Fbeta", p.at("average").get<std::string>()),
                                                 p.at("zero_division").get<double>());
                }});
  registry.add({"F1", "classification", std::string("Fbeta with beta = 1: 2PR/(P+R) per class, averaged; ") + kBatchDoc,
                {task_param(), num_classes_param(), threshold_param(), average_param(), zero_division_param()},
                [](const nlohmann::json& p) {
                  return std::make_unique<Fbeta>(options_of("F1", p), 1.0, parse_average("F1", p.at("average").get<std::string>()),
                                                 p.at("zero_division").get<double>(), "F1");
                }});
}

}  // namespace distmetrics::metrics::detail
