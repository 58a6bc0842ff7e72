"""`uniret results collect`: copy one demo's figures from its artifacts into the committed results/.

After a `make demo` (or `uniret nightly`), this writes, replacing what an earlier collect wrote:

    results/demo.json                  when, at which commit, on which machine, how long; the served
                                       mode (the bundle's recipe's serve_mode) and its heads (the runs
                                       its fusion learned weights for, BM25 left out)
    results/evaluate/metrics.{json,md} the evaluate stage's test-split metrics
    results/significance/A_vs_B.{json,md}  the served mode against BM25 and against each head (and
                                       any `--also` system): paired bootstrap over the test queries

`uniret bench` writes results/bench/ itself. `uniret results render --write` then turns these
files into the results tables of README.md and docs/results.md (uniret.ops.results_table).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from uniret.core.dag import STAGES
from uniret.core.errors import DataError, DataProblem
from uniret.core.jsonio import read_json
from uniret.evaluation.compare_systems import (
    compare_evaluated,
    comparison_doc,
    macro_groups,
    render_comparison,
)
from uniret.evaluation.outputs import METRICS_JSON, METRICS_MD
from uniret.evaluation.overlap_scores import novel_subsets
from uniret.runtime import MANIFEST
from uniret.utils.files import atomic_write_json, make_temp_dir, replace_dir
from uniret.utils.owned import OWNER_STAMP

DEMO_FILE = "demo.json"
EVALUATE_DIR = "evaluate"
SIGNIFICANCE_DIR = "significance"
BENCH_FILE = "bench/bench.json"
GROWTH_FILE = "bench/growth.json"  # `uniret bench --only growth`
BM25 = "bm25"
BM25_SIGNALS = ("bm25", "bm25_rm3")  # fused runs that are BM25, not a head of the model


def significance_stem(a: str, b: str) -> str:
    """File name (without suffix) of the comparison of B against A: `A_vs_B`, '/' as '-'."""
    return f"{a}_vs_{b}".replace("/", "-")


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found; run the DAG (make demo) before collecting its results")
    return read_json(path)


def checkout_commit(folder: Path) -> str:
    """Short commit of the checkout holding `folder` ('+changes' when tracked files differ), else 'unknown'."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=30)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return "unknown"
    return commit + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def _machine(artifacts: Path) -> str:
    """The machine the DAG ran on, as its bench stage recorded it; else this one."""
    bench = artifacts / "bench" / "bench.json"
    m = read_json(bench).get("machine") if bench.is_file() else None
    if not m:
        from uniret.bench.machine import machine_info

        m = machine_info()
    return f"{m.get('cpu_model')}, {m.get('cpu_cores_usable')} cores, {m.get('memory_gb')} GB"


def _served(bundle_manifest: dict[str, Any], served: str | None, path: Path) -> tuple[str, list[str], str | None]:
    """(served mode, its heads, recipe) from the index stage's bundle manifest."""
    model = bundle_manifest.get("model") or {}
    mode = served or model.get("serve_mode")
    if not mode:
        raise DataError(DataProblem(path, None, "model.serve_mode", "the bundle records no served mode; pass --served"))
    fused = ((bundle_manifest.get("fusion") or {}).get("modes") or {}).get(mode, {}).get("runs", [])
    return mode, [r for r in fused if r not in BM25_SIGNALS], model.get("recipe")


def demo_record(artifacts: Path, served: str | None = None, demo_seconds: float | None = None,
                provenance: str | None = None, commit: str | None = None) -> dict[str, Any]:
    """What results/demo.json says about the demo whose artifacts these are (`provenance`: how the
    figures were made when not by one cold demo; the tables show it instead of the demo's time)."""
    evaluate = _read_json(artifacts / "evaluate" / MANIFEST)
    bundle_path = artifacts / "index" / "bundle" / "manifest.json"
    mode, heads, recipe = _served(_read_json(bundle_path), served, bundle_path)
    data = (evaluate.get("params") or {}).get("data") if isinstance(evaluate, dict) else None
    manifest = artifacts / "evaluate" / MANIFEST
    # the table's columns come from here: a damaged manifest must not silently drop one
    if not isinstance(data, dict):
        raise DataError(DataProblem(manifest, None, "params.data", "missing: the datasets and their order are unknown"))
    if not isinstance(data.get("train_dataset"), str):
        raise DataError(DataProblem(manifest, None, "params.data.train_dataset", "must be a dataset name"))
    eval_datasets = data.get("eval_datasets")
    if not isinstance(eval_datasets, list) or not eval_datasets or not all(isinstance(d, str) for d in eval_datasets):
        raise DataError(DataProblem(manifest, None, "params.data.eval_datasets", "must be a non-empty list of names"))
    seconds = {}
    for stage in STAGES:
        path = artifacts / stage / MANIFEST
        if path.is_file():
            value = _read_json(path).get("seconds")
            if isinstance(value, (int, float)):
                seconds[stage] = round(float(value))
    finished = (artifacts / "evaluate" / MANIFEST).stat().st_mtime
    promotion = artifacts / "promote" / "promotion.json"  # the version the evaluated bundle was published as
    published = ((_read_json(promotion).get("pointer") or {}).get("version") if promotion.is_file() else None)
    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(finished)),
        # the checkout's HEAD now is the demo's only if nothing was checked out since: `commit` states it
        "commit": commit or checkout_commit(artifacts.resolve().parent),
        "machine": _machine(artifacts),
        "profile": evaluate.get("profile"),
        "recipe": recipe,
        "served_mode": mode,
        "bundle": published if isinstance(published, str) else None,  # None: the demo promoted nothing
        "heads": heads,
        "train_dataset": data.get("train_dataset"),
        "datasets": data.get("eval_datasets"),  # the table's column order
        "demo_seconds": round(demo_seconds) if demo_seconds is not None else None,
        "stage_seconds": seconds,
        **({"provenance": provenance} if provenance else {}),
    }


def collect(artifacts: Path, out: Path, served: str | None = None, demo_seconds: float | None = None,
            also: Sequence[str] = (), metric: str = "ndcg@10", resamples: int = 10000, seed: int = 0,
            provenance: str | None = None, commit: str | None = None) -> dict[str, Any]:
    """Write demo.json, evaluate/ and significance/ of `artifacts` into `out` (see module doc); returns demo.json.

    Nothing is replaced until every file is written; bench/ and other files in `out` stay as they are.
    """
    artifacts, out = Path(artifacts), Path(out)
    demo = demo_record(artifacts, served, demo_seconds, provenance, commit)
    evaluated = artifacts / "evaluate"
    metrics = _read_json(evaluated / METRICS_JSON)
    datasets = list(metrics.get("datasets") or {})
    systems = {s for by_system in (metrics.get("datasets") or {}).values() for s in by_system}
    mode = demo["served_mode"]
    others = [s for s in dict.fromkeys([*demo["heads"], *also, BM25]) if s != mode]
    missing = sorted({mode, *others} - systems)
    if missing:
        raise DataError(DataProblem(evaluated / METRICS_JSON, None, None,
                                    f"no scores of {', '.join(missing)}; evaluated systems: {', '.join(sorted(systems))}"))
    out.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(out, ".collect-")
    try:
        (tmp / EVALUATE_DIR).mkdir()
        for name in (METRICS_JSON, METRICS_MD):
            if (evaluated / name).is_file():
                shutil.copyfile(evaluated / name, tmp / EVALUATE_DIR / name)
        (tmp / SIGNIFICANCE_DIR).mkdir()
        groups = macro_groups(datasets, demo["train_dataset"] or "")
        for other in others:
            results = compare_evaluated(evaluated, other, mode, metric, datasets, groups, resamples, seed,
                                        subsets=novel_subsets(metrics))
            stem = tmp / SIGNIFICANCE_DIR / significance_stem(other, mode)
            atomic_write_json(stem.with_suffix(".json"), comparison_doc(other, mode, metric, "artifacts/evaluate", results))
            stem.with_suffix(".md").write_text(render_comparison(results, other, mode, metric), encoding="utf-8")
        atomic_write_json(tmp / DEMO_FILE, demo)
        for name in (EVALUATE_DIR, SIGNIFICANCE_DIR):
            # stamped, so the next collect may replace the folder (uniret.utils.owned)
            atomic_write_json(tmp / name / MANIFEST, {**OWNER_STAMP, "written_by_command": "uniret results collect"})
            replace_dir(tmp / name, out / name)
        (tmp / DEMO_FILE).replace(out / DEMO_FILE)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return demo
