"""torchmetrics 1.9.0: the wrappers built on WrapperMetric (MultioutputWrapper, MinMaxMetric,
MultitaskWrapper, the input transformers, BootStrapper) do not forward persistent(True) to the
metrics they wrap: state_dict() holds none of the wrapped metrics' states, so a checkpoint of a
wrapper restores nothing, on every rank, and a resumed run computes from the reset states.

Mechanism: torchmetrics/wrappers/abstract.py (WrapperMetric has no persistent() of its own:
Metric.persistent sets the flags of the wrapper's own, empty, states), where CompositionalMetric
forwards it to its operands (metric.py:1292-1300 of 1.9.0). Upstream: MinMaxMetric's case is
Lightning-AI/torchmetrics#3323 (open; PR #3389); the other wrappers not reported.

    VENV/bin/python peers/repro/torchmetrics_wrapper_persistent.py   # exit 0: the bug shows

Shown on: torchmetrics 1.9.0 (torch 2.15).
"""

import common


def body(rank, world_size):
    import torch
    from torchmetrics.regression import MeanSquaredError
    from torchmetrics.wrappers import MultioutputWrapper

    g = torch.Generator().manual_seed(rank)
    preds, target = torch.randn(8, 3, generator=g), torch.randn(8, 3, generator=g)
    plain = MeanSquaredError(num_outputs=3)
    plain.persistent(True)
    plain.update(preds, target)
    wrapper = MultioutputWrapper(MeanSquaredError(), num_outputs=3)
    wrapper.persistent(True)
    wrapper.update(preds, target)
    saved = wrapper.state_dict()
    restored = MultioutputWrapper(MeanSquaredError(), num_outputs=3)
    restored.persistent(True)
    restored.load_state_dict(saved)
    value = wrapper.compute()  # synced
    again = restored.compute()  # synced too: every rank restored the same way
    return {"plain keys": sorted(plain.state_dict()), "wrapper keys": sorted(saved),
            "value": [round(float(v), 6) for v in value], "restored": [round(float(v), 6) for v in again]}


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.9.0")  # shown on torchmetrics 1.9.0 (torch 2.15)
    results = common.run(body, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print(results)
    ok = all(kind == "ok" for kind, _ in results.values())
    common.verdict(ok and all(v["plain keys"] and not v["wrapper keys"] and v["restored"] != v["value"]
                              for _, v in results.values()),
                   "MeanSquaredError and MultioutputWrapper(MeanSquaredError()) with persistent(True): " +
                   "; ".join(f"rank {r}: {value}" for r, (kind, value) in results.items()))
