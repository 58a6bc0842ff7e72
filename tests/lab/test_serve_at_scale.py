"""lab/serve_at_scale.py build: a synthetic bundle from the tiny real one is a bundle the product opens,
verifies and serves (the 1M-document measurement of E52 runs the same code at scale)."""

from __future__ import annotations

import argparse
import json

import pytest

from uniret.registry.integrity import verify_bundle
from uniret.retrieval.bundle import open_bundle
from uniret.retrieval.modes import build_searchers


@pytest.mark.slow
def test_a_synthetic_bundle_opens_verifies_and_serves_the_fast_mode(lab_script, tiny_bundle, shared_data, tmp_path):
    script = lab_script("serve_at_scale")
    out = tmp_path / "bundle-600"
    result = script.build(argparse.Namespace(docs=600, out=str(out), bundle=str(tiny_bundle), data=str(shared_data)))
    assert result["docs"] == 600 and result["disk_bytes_per_doc"] > 0
    assert result["peak_rss_mb"]["process"] > 100  # at least the interpreter, the corpus and the JVM
    verify_bundle(out)  # every file recorded in SHA256SUMS, unchanged
    docids = json.loads((out / "docids.json").read_text())
    assert len(docids) == 600 and not (out / "impact").exists()  # no Lucene impact index: served from memory
    bundle = open_bundle(out)
    searchers = build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25, modes=["hybrid_fast"])
    run = searchers["hybrid_fast"].search({"q": "vitamin D deficiency and bone density"}, 10)
    assert len(run["q"]) == 10 and set(run["q"]) <= set(docids)
