"""PyTorch-Ignite 0.5.5 ObjectDetectionAvgPrecisionRecall and MeanAveragePrecision: state_dict()
saves none of their accumulated rows, and MeanAveragePrecision raises alone on a rank with no data.

Mechanisms: ObjectDetectionAvgPrecisionRecall keeps its matches in plain lists (_tps, _fps,
_scores, _y_pred_labels) and a [C] tensor _y_true_count, set by reset()
(vision/object_detection_average_precision_recall.py:129-134), and declares no
_state_dict_all_req_keys (CommonObjectDetectionMetrics declares ("metrics", "ap_50_95"), :430,
whose members are such instances): state_dict() saves nothing of them, and an instance loaded from
it computes -1 (no class seen). MeanAveragePrecision (classification) keeps _y_pred and _y_true
lists (mean_average_precision.py:241-242), no _state_dict_all_req_keys either: the loaded instance
raises "Metric could not be computed without any update method call" (:366-367). That check reads
this rank's _num_classes, set by its first update (accuracy.py:26, :87): a rank without data
raises alone while its peers enter the all_gather of _cat_and_agg_tensors: a hang.

    python peers/repro/ignite_average_precision_states.py      # exit 0: the bugs show

Shown on: pytorch-ignite 0.5.5 on torch 2.15.
"""

import common


def detections():
    import torch

    y_pred = [{"bbox": torch.tensor([[0.0, 0.0, 10.0, 10.0], [20.0, 20.0, 30.0, 30.0]]),
               "scores": torch.tensor([0.9, 0.4]), "labels": torch.tensor([0, 1])}]
    y = [{"bbox": torch.tensor([[1.0, 1.0, 10.0, 10.0]]), "labels": torch.tensor([0])}]
    return y_pred, y


def roundtrips():
    import torch
    from ignite.metrics import MeanAveragePrecision
    from ignite.metrics.vision.object_detection_average_precision_recall import ObjectDetectionAvgPrecisionRecall

    out = {}
    metric = ObjectDetectionAvgPrecisionRecall(num_classes=2)
    metric.update(detections())
    fresh = ObjectDetectionAvgPrecisionRecall(num_classes=2)
    fresh.load_state_dict(metric.state_dict())
    out["ObjectDetectionAvgPrecisionRecall"] = (tuple(metric.compute()), tuple(fresh.compute()))

    y_pred, y = torch.tensor([[0.9, 0.1], [0.2, 0.7], [0.6, 0.5]]), torch.tensor([[1, 0], [0, 1], [1, 1]])
    metric = MeanAveragePrecision(is_multilabel=True)
    metric.update((y_pred, y))
    fresh = MeanAveragePrecision(is_multilabel=True)
    fresh.load_state_dict(metric.state_dict())
    try:
        loaded = float(fresh.compute())
    except RuntimeError as e:
        loaded = f"RuntimeError: {e}"
    out["MeanAveragePrecision"] = (float(metric.compute()), loaded)
    return out


def empty_rank(rank, world_size):
    import torch
    from ignite.metrics import MeanAveragePrecision

    metric = MeanAveragePrecision(is_multilabel=True)
    if rank == 0:  # rank 1 has no data
        metric.update((torch.tensor([[0.9, 0.1], [0.2, 0.7]]), torch.tensor([[1, 0], [0, 1]])))
    return float(metric.compute())


if __name__ == "__main__":
    common.requires(ignite=">=0.5.5")  # shown on 0.5.5; earlier releases were not checked
    trips = roundtrips()
    print(trips)
    results = common.run(empty_rank, world_size=2, timeout_s=10, preload=["ignite.metrics"])
    print(results)
    shown = all(original != loaded for original, loaded in trips.values()) and \
        any(kind != "ok" for kind, _ in results.values())
    common.verdict(shown, "; ".join(f"{name}: original {o}, loaded from state_dict() {l}" for name, (o, l) in trips.items()) +
                   "; MeanAveragePrecision with an empty rank: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
