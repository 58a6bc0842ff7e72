"""lab/shared_vectors_ab.py (E102): its two forms of a bundle differ only in dense.npy, both pass their
checksums, the original is left as it was; its summary reads the steady rounds of each server."""

from __future__ import annotations

import json

from uniret.registry.integrity import verify_bundle
from uniret.retrieval.bundle import DENSE_VECTORS_FILE, open_bundle


def test_the_forms_differ_in_dense_npy_alone_and_the_original_is_untouched(lab_script, tiny_bundle, tmp_path):
    ab = lab_script("shared_vectors_ab")
    before = {p.name: p.stat().st_mtime_ns for p in tiny_bundle.iterdir()}
    forms = ab.make_forms(tiny_bundle, tmp_path)
    assert (forms["mapped"] / DENSE_VECTORS_FILE).is_file() and not (forms["private"] / DENSE_VECTORS_FILE).exists()
    for form, folder in forms.items():
        verify_bundle(folder)
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            n for n in before if n != DENSE_VECTORS_FILE or form == "mapped")
        opened = open_bundle(folder)
        assert opened.index.doc_vectors.flags.writeable == (form == "private")
    assert {p.name: p.stat().st_mtime_ns for p in tiny_bundle.iterdir()} == before


def test_the_summary_pairs_each_servers_steady_rounds(lab_script, server_rounds, tmp_path):
    ab = lab_script("shared_vectors_ab")
    server_rounds(tmp_path, "mapped-1", [900.0, 1900.0, 2000.0])
    server_rounds(tmp_path, "private-1", [800.0, 1500.0, 1600.0])
    summary = ab.summarize(tmp_path)
    assert summary["forms"]["mapped"]["ratio_range"] == [round(1900 / 3000, 3), 0.8]
    assert summary["forms"]["private"]["ratio_mean"] == round((0.5 + 0.64) / 2, 3)
    assert summary["forms"]["private"]["hybrid_fast_qps_mean"] == 1550.0
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
