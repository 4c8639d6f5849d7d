#include "classification_inputs.h"

#include <ATen/ATen.h>

#include "distmetrics/metrics/errors.h"
#include "distmetrics/metrics/input_checks.h"

namespace distmetrics::metrics::detail {
namespace {

using namespace checks;

// Scores -> 0/1 by threshold; labels -> checked to be 0/1.
at::Tensor binary_predictions(const std::string& metric, const at::Tensor& input, double threshold) {
  if (at::isFloatingType(input.scalar_type())) {
    require_no_nan(metric, "input", input);
    return input.ge(threshold).to(at::kLong);
  }
  require_labels_dtype(metric, "input", input);
  require_in_range(metric, "input", input, 0, 2);
  return input.to(at::kLong);
}

// The first maximal index along dim 1, whatever the device's argmax does with ties.
at::Tensor first_argmax(const at::Tensor& scores) {
  // The CPU argmax keeps the first of equal maxima (one pass); other devices get the explicit
  // search below. NaN never gets here (rejected first).
  if (scores.device().is_cpu()) return scores.argmax(1);
  const std::int64_t classes = scores.size(1);
  const at::Tensor best = std::get<0>(scores.max(1, /*keepdim=*/true));
  const at::Tensor index = at::arange(classes, scores.options().dtype(at::kLong)).unsqueeze(0);
  return at::where(scores.eq(best), index, at::full_like(index, classes)).amin(1);
}

std::string scores_layout(const at::Tensor& target, std::int64_t classes) {
  std::vector<std::int64_t> shape = target.sizes().vec();
  shape.insert(shape.begin() + (shape.empty() ? 0 : 1), classes);
  return "class scores shaped " + shape_string(shape) + " (num_classes = " + std::to_string(classes) +
         ") or labels shaped like target " + shape_string(target.sizes());
}

DecodedLabels decode_multiclass(const std::string& metric, std::int64_t classes, const Batch& batch) {
  const at::Tensor& input = batch.input;
  const at::Tensor& target = batch.target;
  if (target.dim() < 1) throw InputError(metric, "target", "labels shaped [N, *]", describe(target));
  require_in_range(metric, "target", target, 0, classes);
  DecodedLabels out;
  out.target = target.to(at::kLong).reshape(-1);
  if (input.dim() == target.dim() + 1) {
    std::vector<std::int64_t> expected = target.sizes().vec();
    expected.insert(expected.begin() + 1, classes);
    if (!input.sizes().equals(expected)) {
      throw InputError(metric, "input", scores_layout(target, classes), describe(input));
    }
    require_floating(metric, "input", input);
    require_no_nan(metric, "input", input);
    out.scores = input.movedim(1, -1).reshape({-1, classes});
    out.pred = first_argmax(out.scores);
  } else if (input.dim() == target.dim()) {
    if (!input.sizes().equals(target.sizes()) || !is_label_dtype(input.scalar_type())) {
      throw InputError(metric, "input", scores_layout(target, classes), describe(input));
    }
    require_in_range(metric, "input", input, 0, classes);
    out.pred = input.to(at::kLong).reshape(-1);
  } else {
    throw InputError(metric, "input", scores_layout(target, classes), describe(input));
  }
  return out;
}

}  // namespace

void check_options(const std::string& metric, const ClassificationOptions& options) {
  if (options.task != Task::Binary && options.num_classes < 2) {
    throw InputError(metric, "num_classes", std::string("at least 2 for task ") + to_string(options.task),
                     std::to_string(options.num_classes));
  }
}

DecodedLabels decode_labels(const std::string& metric, const ClassificationOptions& options, const Batch& batch) {
  require_defined(metric, "target", batch.target, "labels");
  require_defined(metric, "input", batch.input, "scores or labels");
  require_absent(metric, "weight", batch.weight, metric + " takes no sample weights");
  require_labels_dtype(metric, "target", batch.target);

  switch (options.task) {
    case Task::Binary: {
      require_same_shape(metric, "input", batch.input, "target", batch.target);
      require_in_range(metric, "target", batch.target, 0, 2);
      DecodedLabels out;
      out.pred = binary_predictions(metric, batch.input, options.threshold).reshape(-1);
      out.target = batch.target.to(at::kLong).reshape(-1);
      return out;
    }
    case Task::Multiclass:
      return decode_multiclass(metric, options.num_classes, batch);
    case Task::Multilabel: {
      const std::string layout = "[N, " + std::to_string(options.num_classes) +
                                 "] (one column per label, num_classes = " +
                                 std::to_string(options.num_classes) + ")";
      if (batch.target.dim() != 2 || batch.target.size(1) != options.num_classes) {
        throw InputError(metric, "target", "labels in {0, 1} shaped " + layout, describe(batch.target));
      }
      if (!batch.input.sizes().equals(batch.target.sizes())) {
        throw InputError(metric, "input", "scores or labels shaped " + layout, describe(batch.input));
      }
      require_in_range(metric, "target", batch.target, 0, 2);
      DecodedLabels out;
      out.pred = binary_predictions(metric, batch.input, options.threshold);
      out.target = batch.target.to(at::kLong);
      return out;
    }
  }
  throw std::logic_error("decode_labels: unknown task");
}

}  // namespace distmetrics::metrics::detail
