"""The encoding benchmark on a few real docs: every path runs, agrees with the reference, and is reported."""

from __future__ import annotations

import json
from itertools import islice

import pytest

from uniret.bench.encoding import encoding_section, render_markdown, write_section
from uniret.data.beir import BeirDataset


@pytest.mark.slow
def test_encoding_section_runs_all_paths_and_writes_reports(shared_data, tmp_path):
    docs = [d.contents for d in islice(BeirDataset(shared_data / "scifact", "scifact").iter_corpus(), 6)] + ["cell"]
    models = {"splade-tiny": {"arch": "splade", "backbone": "splade-tiny"},
              "minilm": {"arch": "dense", "backbone": "minilm", "pooling": "mean", "normalize": True}}
    section = encoding_section(docs, [24], batch_size=3, models=models, threads=1)
    rows = {r["model"]: r for r in section["rows"]}
    splade = rows["splade-tiny"]
    for path in ("torch_before", "torch_after", "onnx"):
        assert splade[path]["docs_per_s"] > 0
    assert splade["torch_before"]["max_abs_diff_vs_first"] == 0.0  # the reference itself
    assert splade["torch_after"]["max_abs_diff_vs_first"] < 1e-4
    assert splade["onnx"]["max_abs_diff_vs_first"] < 1e-3
    assert rows["minilm"]["torch_before"] == {"same_as": "torch_after"}  # no vocabulary max to compare
    assert rows["minilm"]["onnx"]["max_abs_diff_vs_first"] < 1e-4
    json_path, md_path = write_section(section, tmp_path)
    assert json.loads(json_path.read_text())["docs"] == 7
    md = md_path.read_text()
    assert md == render_markdown(section)
    assert "| splade-tiny | 24 |" in md and "| minilm | 24 | = torch_after |" in md
