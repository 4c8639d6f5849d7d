"""blas_at_import.py's MeanAbsoluteError, but its module encodes a batch with a Hugging Face fast
tokenizer as it is imported (what InfoLM's row did in conform's process): unless told not to,
tokenizers start their rayon pool (a thread per core) there, and the rank workers could no longer
be forked. Appends the pid of every process that imports it to DISTMETRICS_TEST_IMPORT_LOG."""

import os
import tempfile

from tokenizers import Tokenizer, models, pre_tokenizers

with open(os.environ["DISTMETRICS_TEST_IMPORT_LOG"], "a") as log:
    log.write("%d\n" % os.getpid())
_TOKENIZER = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1, "b": 2}, unk_token="[UNK]"))
_TOKENIZER.pre_tokenizer = pre_tokenizers.Whitespace()
_ENCODED = _TOKENIZER.encode_batch(["a b"] * 64 + ["b a c"] * 64)  # a parallel encode: rayon, if allowed
assert _ENCODED[0].ids == [1, 2] and _ENCODED[-1].ids == [2, 1, 0]

import sys  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import state_dict_mae  # noqa: E402,F401  (its MeanAbsoluteError, registered as it is imported)
