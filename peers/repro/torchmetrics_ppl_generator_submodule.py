"""torchmetrics 1.9.0: PerceptualPathLength has no state; update(generator) keeps the generator as
an attribute, `self.generator`, which nn.Module registers as a submodule. So state_dict() of an
instance that was updated carries the generator's weights ("generator.*"), which a fresh instance
(no generator yet) refuses: load_state_dict() raises RuntimeError (unexpected keys), and a
checkpoint of a module holding the metric no longer loads. And an instance (a rank) that got no
update() raises AttributeError in compute(): there is nothing else to compute from.

Mechanism: torchmetrics/image/perceptual_path_length.py:167 (`self.generator = generator` in
update()), :172 (compute() reads it); torch/nn/modules/module.py (a Module attribute is a
submodule, saved by state_dict()). Not reported upstream (searched).

    VENV/bin/python peers/repro/torchmetrics_ppl_generator_submodule.py   # exit 0: the bug shows

Shown on: torchmetrics 1.9.0 (torch 2.15). A small seeded generator and similarity net (no LPIPS
weights downloaded).
"""

import common


def body(rank, world_size):
    import torch
    from torchmetrics.image.perceptual_path_length import PerceptualPathLength

    class Generator(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.map = torch.nn.Linear(8, 3 * 16 * 16)

        def sample(self, num_samples):
            return torch.randn(num_samples, 8)

        def forward(self, z):
            return 255 * torch.sigmoid(self.map(z)).reshape(-1, 3, 16, 16)

    class Similarity(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)

        def forward(self, a, b):
            return (self.conv(a) - self.conv(b)).pow(2).mean(dim=(1, 2, 3))

    torch.manual_seed(0)
    generator, similarity = Generator(), Similarity()

    def make():
        return PerceptualPathLength(num_samples=32, batch_size=16, resize=None, sim_net=similarity)

    # A checkpoint of an updated instance, loaded into a fresh one (this rank alone).
    saved = make()
    saved.update(generator)
    try:
        make().load_state_dict(saved.state_dict())
        restored = "ok"
    except RuntimeError as e:
        restored = f"raised RuntimeError {' '.join(str(e).split())[:160]}"
    # Rank 1 without an update.
    metric = make()
    if rank == 0:
        metric.update(generator)
    torch.manual_seed(1)
    try:
        computed = f"ok {float(metric.compute()[0]):.6f}"
    except AttributeError as e:
        computed = f"raised AttributeError {e}"
    return {"restored": restored, "computed": computed}


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.9.0")  # shown on torchmetrics 1.9.0 (torch 2.15)
    results = common.run(body, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print(results)
    ok = all(kind == "ok" for kind, _ in results.values())
    common.verdict(ok and all(v["restored"].startswith("raised") and "generator." in v["restored"]
                              for _, v in results.values())
                   and results[0][1]["computed"].startswith("ok")
                   and results[1][1]["computed"].startswith("raised AttributeError"),
                   "PerceptualPathLength: load_state_dict() of an updated instance's state_dict(), and compute() "
                   "on a rank with no update(): " +
                   "; ".join(f"rank {r}: {value}" for r, (kind, value) in results.items()))
