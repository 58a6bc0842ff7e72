"""The static query side's ASCII WordPiece path (retrieval/query_tokens.py, E104) gives the ids the
tokenizer's own backend gives: every query of the collections, edge cases and fuzzed text; a
tokenizer that is not BERT's keeps its backend."""

from __future__ import annotations

import copy
import string

import numpy as np
import pytest
from tokenizers import normalizers

from uniret.data.beir import BeirDataset
from uniret.models.backbones import load_tokenizer
from uniret.retrieval.query_tokens import AsciiWordPiece

EDGES = ["", "   ", "The   Quick\tbrown\nfox\r!", "under_score snake_case", "C++ & α-synuclein 5'-UTR", "naïve café",
         "IL-6/IL-10 (p<0.05) [1] {x} ~y~ `z` @a #b $c %d ^e |f| \\g", "x" * 150, "a" + "b" * 99,
         "what is [MASK] here", "lower [mask] too", "[CLS][SEP]", "bell\x07char", "form\x0cfeed", "nul\x00byte",
         "tab\tonly", "数据 and data", "ÀÉÎ accents", "emoji 🙂 text", "e.g. i.e. U.S.A. 3.14159 1,000,000"]


def _backend(name: str):
    backend = copy.deepcopy(load_tokenizer(name).backend_tokenizer)
    backend.no_truncation()
    backend.no_padding()
    return backend


@pytest.mark.parametrize("name", ["minilm", "splade-tiny"])
def test_ascii_path_gives_the_backends_ids(name, shared_data):
    backend = _backend(name)
    fast = AsciiWordPiece.of(backend)
    assert fast is not None
    texts = EDGES + [text for dataset in ("scifact", "nfcorpus", "cranfield", "medline", "npl")
                     for text in BeirDataset(shared_data / dataset, dataset).queries().values()]
    rng = np.random.default_rng(5)
    alphabet = list(string.printable) + ["_", "-", "'", "é", "\x7f", "\x01"]
    texts += ["".join(rng.choice(alphabet, size=rng.integers(0, 60))) for _ in range(3000)]
    for text in texts:
        assert fast.ids(text) == backend.encode(text, add_special_tokens=False).ids, repr(text)
    for text in texts:  # again, every word now read from the cache
        assert fast.ids(text) == backend.encode(text, add_special_tokens=False).ids, repr(text)
    assert fast.words and fast.ids("what is [MASK] here")[-2] == backend.token_to_id("[MASK]")


def test_other_pipelines_keep_the_backend():
    backend = _backend("minilm")
    backend.normalizer = normalizers.Lowercase()  # not BertNormalizer: the ASCII rules may not hold
    assert AsciiWordPiece.of(backend) is None
    assert AsciiWordPiece.of(object()) is None
