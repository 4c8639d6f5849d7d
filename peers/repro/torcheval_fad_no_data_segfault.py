"""torcheval (shown on 0.0.7, torch 2.15, torchaudio 2.11): FrechetAudioDistance.compute() on an
instance that has seen no audio kills its process (SIGSEGV), where FrechetInceptionDistance warns
and returns 0.0. With no sample, compute() divides the partial sums by counts of 0 and hands
NaN means and covariances to torchaudio's frechet_distance, whose torch.linalg.eigvals on a NaN
matrix crashes in MKL ("Parameter 3 was incorrect on entry to SGEBAL", then a segfault: torch
documents that linalg may segfault on non-finite input, pytorch/pytorch#61251 and #121149). An
evaluation loop that computes an empty split (a rank with no data under its toolkit's sync, or no
data at all) loses the whole process, not one metric.

Mechanism: torcheval/metrics/audio/fad.py:106-123 (compute: no guard on target_n/pred_n), against
torcheval/metrics/image/fid.py:171-179 (FID's guard: warn and return 0.0);
torchaudio/functional/functional.py:2510 (eigvals). Not reported upstream (searched torcheval's
tracker: FrechetAudioDistance, segfault, NaN).

    VENV/bin/python peers/repro/torcheval_fad_no_data_segfault.py   # exit 0: the bug shows

Shown on: torcheval 0.0.7 (torch 2.15).
"""

import common


def _model():
    import torch

    class FrameStatistics(torch.nn.Module):  # 8 frames of 8 samples: each frame's mean and std
        def forward(self, frames):
            return torch.stack([frames.mean(dim=1), frames.std(dim=1)], dim=1)

    return FrameStatistics()


def fid_without_data(rank, world_size):
    """The contrast: FID on no image (a small stand-in feature extractor, no download)."""
    import warnings

    import torch
    from torcheval.metrics import FrechetInceptionDistance

    class ChannelStatistics(torch.nn.Module):
        def forward(self, images):
            return torch.cat([images.mean(dim=(2, 3)), images.std(dim=(2, 3))], dim=1)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(FrechetInceptionDistance(model=ChannelStatistics(), feature_dim=6).compute())


def fad_without_data(rank, world_size):
    from torcheval.metrics import FrechetAudioDistance

    metric = FrechetAudioDistance(preproc=lambda w: w.reshape(8, 8), model=_model(), embedding_dim=2)
    return float(metric.compute())


if __name__ == "__main__":
    common.requires(torch=">=2.1", torcheval=">=0.0.7")
    contrast = common.run(fid_without_data, world_size=1, timeout_s=10, preload=["torcheval"])
    shown = common.run(fad_without_data, world_size=1, timeout_s=10, preload=["torcheval"])
    print(contrast)
    print(shown)
    common.verdict(contrast[0] == ("ok", 0.0) and shown[0][0] == "crashed",
                   f"compute() with no data: FrechetInceptionDistance {contrast[0][0]} {contrast[0][1]}; "
                   f"FrechetAudioDistance {shown[0][0]} {str(shown[0][1])[:120]}")
