"""lab/train_step.py runs on the default recipe's model and writes every row it reports."""

from __future__ import annotations

import json
import subprocess
import sys


def test_train_step_probe_writes_both_precisions_and_both_lexicon_paths(repo_root, shared_data, tmp_path):
    out = tmp_path / "train_step.json"
    subprocess.run([sys.executable, str(repo_root / "lab" / "train_step.py"), "--profile", "tiny",
                    "--params", str(repo_root / "params.yaml"), "--data", str(shared_data), "--repeats", "1",
                    "--queries", "2", "--docs", "2", "--out", str(out)], check=True, cwd=tmp_path, timeout=600)
    result = json.loads(out.read_text())
    assert result["recipe"] == "hybrid" and result["docs"] == 2 and isinstance(result["cpu_native_bf16"], bool)
    rows = {(r["precision"], r["part"]): r["forward_backward_ms"] for r in result["rows"]}
    parts = {"dense module", "lexicon module (active entries)", "lexicon module (full logits backward)", "pair model"}
    assert set(rows) == {(p, part) for p in ("fp32", "bf16") for part in parts}
    assert all(ms > 0 for ms in rows.values())
