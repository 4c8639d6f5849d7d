"""A test-only detection metric over lists of dicts (torchmetrics style, as MeanAveragePrecision
takes them): per image, preds {"boxes": [k, 4] xyxy, "scores": [k], "labels": [k]} and targets
{"boxes": [m, 4], "labels": [m]}. Each predicted box, highest score first, is a true positive
when it overlaps an unmatched target box of its label with IoU >= iou_threshold (the best such
box is taken). The list state holds one [k, 2] tensor (label, true positive) per image, gathered
at compute. compute() returns {"precision", "total_images", "per_class": [{"tp", "fp",
"precision"}, ...]}.

DISTMETRICS_TEST_UNSYNCED_LIST=1 leaves the list state out of the sync."""

import math
import os

import torch
import torch.distributed as dist

import distmetrics

UNSYNCED = os.environ.get("DISTMETRICS_TEST_UNSYNCED_LIST") == "1"


def box_iou(a, b):
    """IoU of every box in a [k, 4] with every box in b [m, 4] (xyxy): [k, m]."""
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(dim=2)
    area_a = (a[:, 2:] - a[:, :2]).prod(dim=1)
    area_b = (b[:, 2:] - b[:, :2]).prod(dim=1)
    return inter / (area_a[:, None] + area_b[None, :] - inter)


class DetectionPrecision:
    distmetrics_state = ["matches"]

    def __init__(self, num_classes=3, iou_threshold=0.5):
        self.num_classes = num_classes
        self.iou_threshold = iou_threshold
        self.reset()

    def reset(self):
        self.matches = []  # one [k, 2] int64 tensor (label, true positive) per image

    def update(self, preds, target):
        for p, t in zip(preds, target):
            order = torch.argsort(p["scores"], descending=True)
            boxes, labels = p["boxes"][order], p["labels"][order]
            iou = box_iou(boxes, t["boxes"]) if len(t["boxes"]) else torch.zeros(len(boxes), 0)
            taken = torch.zeros(len(t["boxes"]), dtype=torch.bool, device=boxes.device)
            tp = torch.zeros(len(boxes), dtype=torch.int64, device=boxes.device)
            for i in range(len(boxes)):
                candidates = (t["labels"] == labels[i]) & ~taken & (iou[i] >= self.iou_threshold)
                if candidates.any():
                    best = torch.where(candidates, iou[i], torch.full_like(iou[i], -1)).argmax()
                    taken[best] = True
                    tp[i] = 1
            self.matches.append(torch.stack([labels.to(torch.int64), tp], dim=1))

    def compute(self):
        matches = list(self.matches)
        images = len(matches)
        if not UNSYNCED and dist.is_initialized() and dist.get_world_size() > 1:
            gathered = [None] * dist.get_world_size()
            dist.all_gather_object(gathered, [m.cpu() for m in matches])
            matches = [m for rank_matches in gathered for m in rank_matches]
            images = len(matches)
        rows = torch.cat(matches) if matches else torch.zeros(0, 2, dtype=torch.int64)
        per_class = []
        for c in range(self.num_classes):
            mine = rows[rows[:, 0] == c]
            tp = int(mine[:, 1].sum())
            fp = len(mine) - tp
            per_class.append({"tp": tp, "fp": fp, "precision": tp / (tp + fp) if tp + fp else math.nan})
        tp, total = int(rows[:, 1].sum()), len(rows)
        return {"precision": tp / total if total else math.nan, "per_class": per_class, "total_images": images}


distmetrics.register("DetectionPrecision",
                     lambda params: DetectionPrecision(params.get("num_classes", 3), params.get("iou_threshold", 0.5)),
                     adapter="torchmetrics")
