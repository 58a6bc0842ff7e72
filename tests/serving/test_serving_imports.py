"""A serving process never loads torch: the served modes run ONNX Runtime, faiss, Lucene and the
static tables, and torch would cost each uvicorn worker about 190 MB of resident memory and seconds
of start-up (the demo's bundle, served modes: 551 MB against 364 MB). The bundle's tokenizer is
loaded by the class its folder names, not AutoTokenizer, whose model configs import torch; it must
tokenize exactly as AutoTokenizer's does.
"""

from __future__ import annotations

import subprocess
import sys

TEXTS = ["cancer cells proliferation", "", "  ", "Ünïcödé café naïve — “quotes” 10^5 α-β",
         "[CLS] [SEP] [MASK] hello", "word " * 100]

LOAD_FOR_SERVING = """
import sys
from pathlib import Path

import uniret.serving.app  # noqa: F401 - what `uniret serve` imports
from uniret.serving.source import bundle_loader

searchers = bundle_loader(1)(Path(sys.argv[1]))
print(",".join(sorted(searchers)))
print("torch" in sys.modules)
"""


def test_loading_a_bundle_for_serving_imports_no_torch(tiny_bundle):
    done = subprocess.run([sys.executable, "-c", LOAD_FOR_SERVING, str(tiny_bundle)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    modes, torch_loaded = done.stdout.splitlines()[-2:]
    assert "hybrid_fast" in modes.split(",")  # the bundle's modes were built, the served one among them
    assert torch_loaded == "False"


def test_the_bundle_tokenizer_tokenizes_as_auto_tokenizer(tiny_bundle):
    from transformers import AutoTokenizer

    from uniret.retrieval.bundle import TOKENIZER_DIR, load_tokenizer

    ours = load_tokenizer(tiny_bundle)
    auto = AutoTokenizer.from_pretrained(str(tiny_bundle / TOKENIZER_DIR), local_files_only=True)
    assert type(ours) is type(auto)
    assert len(ours) == len(auto) and ours.all_special_ids == auto.all_special_ids
    for max_length in (8, 32, 256):
        got = ours(TEXTS, padding=True, truncation=True, max_length=max_length)
        want = auto(TEXTS, padding=True, truncation=True, max_length=max_length)
        assert dict(got) == dict(want)
    assert ours(TEXTS[0], add_special_tokens=False)["input_ids"] == auto(TEXTS[0], add_special_tokens=False)["input_ids"]
