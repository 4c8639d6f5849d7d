"""torchmetrics 1.9.0: FrechetInceptionDistance (and MemorizationInformedFrechetInceptionDistance)
keep the feature dtype in a plain attribute, `orig_dtype`, set by update() and read by compute():
a rank that got no data syncs with the others, then raises AttributeError alone (its peers wait in
their next collective: a hang in a training loop); an instance loaded from a state_dict() raises
the same way until it is updated again.

Mechanism: torchmetrics/image/fid.py:395 (`self.orig_dtype = features.dtype` in update()), :420
(`.to(self.orig_dtype)` in compute()); mifid.py:213, :237. `orig_dtype` is neither a state nor set
in __init__.

    VENV/bin/python peers/repro/torchmetrics_fid_orig_dtype.py   # exit 0: the bug shows

Shown on: torchmetrics 1.9.0 (torch 2.15). A fixed 6-feature extractor (no weights downloaded).
"""

import common


def body(rank, world_size):
    import torch
    from torchmetrics.image.fid import FrechetInceptionDistance

    class ChannelStatistics(torch.nn.Module):
        num_features = 6

        def forward(self, x):
            x = x.float()
            return torch.cat([x.mean(dim=(2, 3)), x.std(dim=(2, 3))], dim=1)

    torch.manual_seed(rank)
    metric = FrechetInceptionDistance(feature=ChannelStatistics())
    if rank == 0:  # rank 1 has no data
        images = torch.rand(8, 3, 16, 16)
        metric.update(images, real=True)
        metric.update((images + 0.1).clamp(0, 1), real=False)
    return float(metric.compute())  # both sync; rank 1 then raises AttributeError alone


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.9.0")  # shown on torchmetrics 1.9.0 (torch 2.15)
    results = common.run(body, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print(results)
    common.verdict(results[1][0] == "raised" and "orig_dtype" in str(results[1][1]),
                   "FrechetInceptionDistance.compute() on a rank with no data: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
