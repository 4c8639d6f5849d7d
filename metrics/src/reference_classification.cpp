// Registry entries of the classification metrics (classification.h).
#include "distmetrics/metrics/classification.h"
#include "distmetrics/metrics/confusion_matrix.h"
#include "reference_metrics.h"

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
  return param("threshold", "float", 0.5, "binary/multilabel scores count as positive when score >= threshold");
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
                 param("top_k", "int", 1, "multiclass scores: correct when the target is among the k best")},
                [](const nlohmann::json& p) {
                  return std::make_unique<Accuracy>(options_of("Accuracy", p), p.at("top_k").get<std::int64_t>());
                }});
  registry.add({"TopKCategoricalAccuracy", "classification",
                "multiclass: fraction of samples whose target is among the k best scores; input scores [N,C,*], "
                "target labels [N,*] in [0,C)",
                {param("k", "int", 5, "how many of the best-scoring classes count as correct"),
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

  // From the confusion matrix (confusion_matrix.h).
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
