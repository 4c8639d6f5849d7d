"""torchmetrics 1.9.0: InfoLM's corpus score depends on the order of the (prediction, reference)
pairs, because each side is sorted by length for the model and then "unsorted" with the sorting
permutation itself instead of its inverse, separately for predictions and references: the i-th
prediction's distribution is then compared with another sentence's reference. The same pairs in
another order give another score; under DDP a sync gathers the sentences in rank order, so a
round-robin split (or a DistributedSampler's deal) gives another score than one process.

Mechanism: torchmetrics/functional/text/infolm.py:540-541 (`preds_distribution[
preds_dataloader.dataset.sorting_indices]`, the same for the target), over
functional/text/helper_embedding_metric.py:79-84 (`_sort_data_according_length` returns
`argsort` of the lengths: the distributions come in sorted order, and `x[argsort]` sorts again
rather than restoring). Not found upstream (searched).

    /root/.cache/distmetrics/torch2-2.15.0/bin/python peers/repro/torchmetrics_infolm_pair_order.py

A one-layer BertForMaskedLM with random weights and a small WordPiece vocabulary, written to a temp
folder: no download. Shown on: torchmetrics 1.9.0 (torch 2.15, transformers 4.57).
"""

import os
import random
import shutil
import tempfile

import common

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "away", "big", "red"]


def masked_lm_folder():
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    folder = tempfile.mkdtemp(prefix="repro-infolm-")
    with open(os.path.join(folder, "vocab.txt"), "w") as f:
        f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    tokenizer = BertTokenizerFast(os.path.join(folder, "vocab.txt"), do_lower_case=True)
    config = BertConfig(vocab_size=5 + len(WORDS), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32, pad_token_id=0)
    torch.manual_seed(7)
    BertForMaskedLM(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.9.0")  # shown on 1.9.0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from torchmetrics.text.infolm import InfoLM

    rng = random.Random(1)
    preds = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))) for _ in range(12)]
    target = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))) for _ in range(12)]
    folder = masked_lm_folder()
    try:
        def score(order):
            metric = InfoLM(model_name_or_path=folder, max_length=16, verbose=False)
            metric.update([preds[i] for i in order], [target[i] for i in order])
            return float(metric.compute())

        in_order, reversed_order = score(range(12)), score(range(11, -1, -1))
    finally:
        shutil.rmtree(folder, True)
    print("the same 12 pairs in order:", in_order, "reversed:", reversed_order)
    common.verdict(abs(in_order - reversed_order) > 1e-6 * max(abs(in_order), 1e-12),
                   f"InfoLM of the same 12 (prediction, reference) pairs: in order {in_order:.6g}, "
                   f"reversed {reversed_order:.6g}")
