"""bf16 autocast of the torch corpus pass (mine's `amp`): close to fp32, and only where asked."""

from __future__ import annotations

from itertools import islice

import numpy as np
import torch

from uniret.data.beir import BeirDataset
from uniret.retrieval.encoding import TorchTextEncoder


def test_bf16_encoding_stays_close_to_fp32(unifier, shared_data):
    model, tokenizer = unifier
    texts = [d.contents for d in islice(BeirDataset(shared_data / "scifact", "scifact").iter_corpus(), 12)]
    fp32 = TorchTextEncoder(model, tokenizer, 4, 32, 128)
    bf16 = TorchTextEncoder(model, tokenizer, 4, 32, 128, amp="bf16")
    off = TorchTextEncoder(model, tokenizer, 4, 32, 128, amp="off")
    assert fp32.autocast_dtype is None and off.autocast_dtype is None and bf16.autocast_dtype == torch.bfloat16
    # corpus-cache keys: only what differs from the model's own fp32 encodings is named
    assert fp32.variant_key() == "" and bf16.variant_key() == "-bfloat16"
    assert TorchTextEncoder(model, tokenizer, 4, 32, 64, amp="bf16").variant_key() == "-len64-bfloat16"
    a, b = fp32.encode(texts, is_query=False), bf16.encode(texts, is_query=False)
    assert b.dense.dtype == np.float32 and b.dense.shape == a.dense.shape
    cos = (a.dense * b.dense).sum(1) / np.linalg.norm(a.dense, axis=1) / np.linalg.norm(b.dense, axis=1)
    assert cos.min() > 0.98 and not np.array_equal(a.dense, b.dense)  # bf16 really ran, and stayed close
    # the sparse side keeps its heaviest terms
    for row in range(len(texts)):
        top_a = set(np.argsort(-a.sparse[row].toarray()[0])[:10])
        top_b = set(np.argsort(-b.sparse[row].toarray()[0])[:10])
        assert len(top_a & top_b) >= 7, row
    np.testing.assert_array_equal(off.encode(texts, is_query=False).dense, a.dense)
