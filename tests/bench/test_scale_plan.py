"""The scale plan's arithmetic (uniret.bench.scale_plan): FLOPs per token, per-pass hours, DAG split."""

from __future__ import annotations

import pytest

from uniret.bench.scale_plan import Assumptions, encoder_flops_per_token, plan, render


def test_flops_per_token_of_bert_base():
    # 12 layers x 2 x (4 x 768^2 + 2 x 768 x 3072) = 169.9M; an MLM head adds 2 x 768 x 30522 = 46.9M
    assert encoder_flops_per_token(12, 768, 3072, None) == pytest.approx(169.9e6, rel=1e-3)
    assert encoder_flops_per_token(12, 768, 3072, 30522) - encoder_flops_per_token(12, 768, 3072, None) == 2 * 768 * 30522


def test_plan_figures_follow_the_measurement_and_the_assumptions():
    encoding = {"rows": [{"model": "unifier", "max_length": 128, "mean_tokens": 100.0,
                          "torch_after": {"docs_per_s": 5.0}, "onnx": {"docs_per_s": 10.0}}]}
    a = Assumptions()
    p = plan(encoding, a)
    torch_row, onnx_row = p["cpu"]
    # 8.8M docs x 80 tokens / (5 docs/s x 100 tokens) / 3600
    assert torch_row["core_hours_per_pass"] == pytest.approx(a.corpus_docs * a.doc_tokens / 500 / 3600, abs=0.1)
    assert onnx_row["core_hours_per_pass"] == pytest.approx(torch_row["core_hours_per_pass"] / 2, abs=0.1)
    hours = [d["hours"] for d in p["dag"]]
    assert hours == sorted(hours, reverse=True) and len(hours) == len(a.scaling_efficiency)
    for d in p["dag"]:
        assert sum(d["share"].values()) == pytest.approx(1.0, abs=0.02)
    flat = {r["model"]: r["flat_bytes_per_doc"] for r in p["index_sizes"]}
    assert all(v == r["dim"] * 4 for r in p["index_sizes"] for k, v in flat.items() if k == r["model"])
    assert "| GPUs |" in render(p)
