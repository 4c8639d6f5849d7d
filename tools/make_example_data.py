#!/usr/bin/env python3
"""Writes the data file of examples/python/own_data/ (a team's own data, saved as they would save
it: torch.save of a dict of tensors). Deterministic; run it again to regenerate:

    /usr/bin/python3 tools/make_example_data.py
"""
from pathlib import Path

import torch

OUT = Path(__file__).resolve().parents[1] / "examples" / "python" / "own_data" / "regression_inputs.pt"


def main():
    g = torch.Generator().manual_seed(2024)
    target = 3.0 + 2.0 * torch.randn(48, 2, generator=g, dtype=torch.float64)
    noise = 0.4 * torch.randn(48, 2, generator=g, dtype=torch.float64)
    noise[::11] *= 10  # a few outliers, as real validation sets have
    torch.save({"input": target + noise, "target": target}, OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
