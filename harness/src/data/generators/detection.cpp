// detection: one image's object detections per sample, structured samples that the descriptor's
// Python makes (python/distmetrics/detection_data.py): each image from (seed, its index) only,
// predicted boxes, scores and labels against true boxes and labels; images with no true box.
#include "making.h"

namespace distmetrics::harness::generators {

DataGenerator detection() {
  DataGenerator g;
  g.name = "detection";
  g.description =
      "detection (structured, Python): input [N] dicts of predicted boxes [D, 4] (x1, y1, x2, y2), scores [D] and "
      "labels [D]; target [N] dicts of true boxes [T, 4] and labels [T]; some images with no true box";
  g.params = with_common(
      {drawn(ranged(param("boxes", "int", "most true boxes an image holds (at least 1 where it holds any)", 3), 1, 50),
             {1, 3, 20}),
       drawn(ranged(param("classes", "int", "object classes (labels 0 .. classes-1)", 3), 1, 100), {1, 3, 10}),
       drawn(ranged(param("empty_rate", "float", "fraction of images with no true box", 0.2), 0, 1), {0.0, 0.5, 1.0}),
       drawn(ranged(param("recall", "float", "chance that a true box is predicted (a jittered copy)", 0.8), 0, 1),
             {0.0, 0.5, 1.0}),
       drawn(ranged(param("jitter", "float", "standard deviation of a predicted box's corners, in pixels (of 64)", 2.0),
                    0, 64),
             {0.0, 2.0, 10.0}),
       drawn(ranged(param("label_noise", "float", "chance that a predicted box's label is redrawn", 0.1), 0, 1),
             {0.0, 0.1, 1.0}),
       drawn(ranged(param("false_positives", "int", "most spurious predicted boxes an image holds", 1), 0, 50),
             {0, 1, 5})});
  g.produces = {
      {"input", "[N]", "dict", "`[N]` dicts: `boxes` `[D, 4]` float32, `scores` `[D]` float32, `labels` `[D]` int64"},
      {"target", "[N]", "dict", "`[N]` dicts: `boxes` `[T, 4]` float32, `labels` `[T]` int64 (some with `T = 0`)"}};
  g.carrier = DataCarrier::Structured;
  g.python = "distmetrics.detection_data:make";
  g.elements_per_sample = [](const nlohmann::json& p) {
    return 7 * (size_param(p, "boxes", 3) + size_param(p, "false_positives", 1)) + 5 * size_param(p, "boxes", 3);
  };
  return g;
}

}  // namespace distmetrics::harness::generators
