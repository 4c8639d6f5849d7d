"""torcheval 0.0.7 Perplexity(ignore_index=...): update() raises on a batch whose every target is
the ignore index (a batch of padding only: the last, short batch of an evaluation set of padded
sequences), where it should count no token. Under torch.distributed the rank that drew such a
batch raises in update() alone; the others go on into sync_and_compute and wait for it.

Mechanism: torcheval/metrics/functional/text/perplexity.py:146-153 (_perplexity_input_check, run
by every update through :90): the check masks the ignored targets out and then takes
`torch.max(_target)` of what is left, which is empty for a padding-only batch (RuntimeError:
max(): Expected reduction dim to be specified for input.numel() == 0). The update itself (:97-106)
would count 0 tokens and add 0: only the check fails. torchmetrics' Perplexity counts such a
batch as 0 tokens (checked by the same generated scenario). Not found upstream (searched).

    python peers/repro/torcheval_perplexity_padding_batch.py     # exit 0: the bug shows

Shown on: torcheval 0.0.7 on torch 2.15 and on torch 1.13.
"""

import common


def body(rank, world_size):
    import torch
    from torcheval.metrics import Perplexity
    from torcheval.metrics.toolkit import sync_and_compute

    torch.manual_seed(0)
    metric = Perplexity(ignore_index=-100)
    metric.update(torch.randn(2, 3, 5), torch.tensor([[1, 2, -100], [4, 0, 3]]))
    if rank == 1:  # rank 1's last batch: one sequence of padding
        metric.update(torch.randn(1, 3, 5), torch.tensor([[-100, -100, -100]]))
    return float(sync_and_compute(metric))


if __name__ == "__main__":
    common.requires(torcheval="==0.0.7")
    results = common.run(body, world_size=2, timeout_s=10, preload=["torcheval"])
    print(results)
    common.verdict(any(kind != "ok" for kind, _ in results.values()),
                   "Perplexity(ignore_index=-100) with a padding-only batch on rank 1: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
