"""torchmetrics 1.9.0: CLIPImageQualityAssessment computes its prompt anchors under
torch.inference_mode() and registers them as a (persistent) buffer, `anchors`: an inference tensor.
load_state_dict() copies into each buffer in place, outside inference mode, which torch refuses:
no instance can load a state_dict(), its own included, and a checkpoint of a module that holds
the metric does not load ("Inplace update to inference tensor outside InferenceMode").

Mechanism: torchmetrics/multimodal/clip_iqa.py:197-201 (`with torch.inference_mode():` around
_clip_iqa_get_anchor_vectors, then `self.register_buffer("anchors", anchors)`); torch's
Module._load_from_state_dict (param.copy_). Not reported upstream (searched).

    VENV/bin/python peers/repro/torchmetrics_clip_iqa_inference_anchors.py   # exit 0: the bug shows

Shown on: torchmetrics 1.9.0 (torch 2.15, transformers 4.57.6). A one-layer CLIPModel with random
weights and a character-level CLIPProcessor built here (no download), passed as
model_name_or_path's callable.
"""

import common


def _clip():
    import os
    import torch

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer
    import json
    import tempfile

    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for c in map(chr, range(33, 127)):
        vocab[c] = len(vocab)
        vocab[c + "</w>"] = len(vocab)
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "vocab.json"), "w") as f:
            json.dump(vocab, f)
        with open(os.path.join(folder, "merges.txt"), "w") as f:
            f.write("#version: 0.2\n")
        tokenizer = CLIPTokenizer(os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt"))
    tower = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2)
    config = CLIPConfig(text_config=dict(tower, vocab_size=len(vocab), max_position_embeddings=64,
                                         bos_token_id=0, eos_token_id=1, pad_token_id=1),
                        vision_config=dict(tower, image_size=16, patch_size=4), projection_dim=8)
    torch.manual_seed(0)
    images = CLIPImageProcessor(size={"shortest_edge": 16}, crop_size={"height": 16, "width": 16}, do_rescale=False)
    return CLIPModel(config).eval(), CLIPProcessor(image_processor=images, tokenizer=tokenizer)


def body(rank, world_size):
    import torch
    from torchmetrics.multimodal import CLIPImageQualityAssessment

    model_and_processor = _clip()
    saved = CLIPImageQualityAssessment(model_name_or_path=lambda: model_and_processor)
    saved.update(torch.rand(2, 3, 16, 16))
    fresh = CLIPImageQualityAssessment(model_name_or_path=lambda: model_and_processor)
    try:
        fresh.load_state_dict(saved.state_dict())
        return "ok"
    except RuntimeError as e:
        return f"raised RuntimeError {' '.join(str(e).split())[:400]}"


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.9.0")  # shown on torchmetrics 1.9.0 (torch 2.15)
    results = common.run(body, world_size=2, timeout_s=20, preload=["torchmetrics", "transformers"])
    print(results)
    common.verdict(all(kind == "ok" and value.startswith("raised") and "inference tensor" in value
                       for kind, value in results.values()),
                   "CLIPImageQualityAssessment.load_state_dict(state_dict()): " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
