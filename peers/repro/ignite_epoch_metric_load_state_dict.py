"""PyTorch-Ignite 0.5.3: the state_dict() of an EpochMetric (ROC_AUC, AveragePrecision, ...) that
has seen data cannot be loaded into a fresh instance: load_state_dict() raises ValueError "Size
of y: 2 does not match the size of x: '0'", so a checkpoint of such a metric cannot be resumed.

Mechanism: ignite/metrics/metric.py:680-683 (_load_state_dict_per_rank) walks each of
`_state_dict_all_req_keys` with utils._tree_apply2 (ignite/utils.py:212), which demands that the
saved value and the instance's current one have the same structure; EpochMetric's `_predictions`
and `_targets` are lists with one tensor per update(), and a fresh instance's are empty, so any
saved list with entries does not match. Not reported upstream (searched the Ignite tracker for
EpochMetric load_state_dict and the error text; issue #2999 added state_dict to metrics).
One process is enough (a world of one, as the other reproductions start it).

    /usr/bin/python3 peers/repro/ignite_epoch_metric_load_state_dict.py     # exit 0: the bug shows

Shown on: Ignite 0.5.3 (torch 1.13) and 0.5.5 (torch 2.15).
"""

import common


def body(rank, world_size):
    import torch
    from ignite.metrics import ROC_AUC

    metric = ROC_AUC()
    metric.update((torch.tensor([0.1, 0.9, 0.4]), torch.tensor([0, 1, 1])))
    metric.update((torch.tensor([0.2, 0.8]), torch.tensor([1, 0])))
    saved = metric.state_dict()
    fresh = ROC_AUC()
    try:
        fresh.load_state_dict(saved)
    except ValueError as e:
        return f"ValueError: {e}"
    return f"loaded: {fresh.compute()} (original {metric.compute()})"


if __name__ == "__main__":
    common.requires(ignite=">=0.5.3")  # shown on Ignite 0.5.3 (torch 1.13) and 0.5.5 (torch 2.15)
    results = common.run(body, world_size=1, timeout_s=30, preload=["ignite.metrics", "sklearn.metrics"])
    print(results)
    kind, value = results[0]
    common.verdict(kind == "ok" and value.startswith("ValueError") and "does not match" in value,
                   f"ROC_AUC state_dict() after 2 updates, loaded into a fresh ROC_AUC: {value}")
