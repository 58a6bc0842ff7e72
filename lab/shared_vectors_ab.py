"""hybrid_fast over HTTP with a bundle's flat vectors mapped from dense.npy, one copy for every worker,
against read into each worker as before (E102).

Usage: python lab/shared_vectors_ab.py BUNDLE [--servers 3] [--requests 12000] [--out lab/results/shared_vectors]
       python lab/shared_vectors_ab.py --summarize lab/results/shared_vectors

From BUNDLE, two forms as hard-linked copies in a temp folder, each with its SHA256SUMS rewritten:
`mapped` holds dense.npy (written from dense.faiss when the bundle predates E102) and `private` does not
(serving then reads the vectors into each process). The forms take turns, `--servers` servers each:
lab/serve_threads.py with the modes bm25 and hybrid_fast, three rounds (the bm25 mode's JVM compiles
through the first). summary.json: per server, hybrid_fast's QPS over the bm25 mode's in rounds 2 and 3
and both modes' server CPU per request. CPU figures are the machine's: take them on an idle one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FORMS = ("mapped", "private")
MODES = ["bm25", "hybrid_fast"] * 3
STEADY = slice(1, None)  # rounds 2 and 3: the JVM compiled


def make_forms(bundle: Path, tmp: Path) -> dict[str, Path]:
    """The two forms of `bundle` under `tmp` (hard links; a changed file is replaced, never written through)."""
    from uniret.registry.integrity import SUMS, write_checksums
    from uniret.retrieval.bundle import DENSE_FILE, DENSE_VECTORS_FILE
    from uniret.retrieval.dense import load_faiss_index, save_vectors, storage_view

    forms = {}
    for form in FORMS:
        folder = tmp / form
        shutil.copytree(bundle, folder, copy_function=os.link)
        vectors = folder / DENSE_VECTORS_FILE
        if vectors.exists():
            vectors.unlink()
        if form == "mapped":
            save_vectors(storage_view(load_faiss_index(folder / DENSE_FILE, mapped=True)), vectors)  # no private copy
        if (folder / SUMS).exists():
            (folder / SUMS).unlink()  # a link to the original's: write a new file
            write_checksums(folder)
        forms[form] = folder
    return forms


def summarize(out: Path) -> dict:
    """summary.json from the servers' JSON files in `out`."""
    servers = []
    for path in sorted(out.glob("*-*.json")):
        rows = json.loads(path.read_text())["modes"]
        by_mode = {m: [r for r in rows if r["mode"] == m][STEADY] for m in ("bm25", "hybrid_fast")}
        ratios = [f["qps"] / b["qps"] for b, f in zip(by_mode["bm25"], by_mode["hybrid_fast"], strict=True)]
        servers.append({"server": path.stem, "form": path.stem.split("-")[0],
                        "hybrid_fast_qps": [r["qps"] for r in by_mode["hybrid_fast"]],
                        "bm25_qps": [r["qps"] for r in by_mode["bm25"]],
                        "hybrid_fast_vs_bm25_qps": [round(r, 3) for r in ratios],
                        "hybrid_fast_server_cpu_ms": [r["server_cpu_ms_per_request"] for r in by_mode["hybrid_fast"]],
                        "bm25_server_cpu_ms": [r["server_cpu_ms_per_request"] for r in by_mode["bm25"]],
                        "failed": sum(r["failed"] for r in rows)})
    per_form = {}
    for form in FORMS:
        mine = [s for s in servers if s["form"] == form]
        ratios = [r for s in mine for r in s["hybrid_fast_vs_bm25_qps"]]
        qps = [q for s in mine for q in s["hybrid_fast_qps"]]
        per_form[form] = {"servers": len(mine), "ratio_range": [min(ratios), max(ratios)] if ratios else None,
                          "ratio_mean": round(sum(ratios) / len(ratios), 3) if ratios else None,
                          "hybrid_fast_qps_mean": round(sum(qps) / len(qps), 1) if qps else None}
    summary = {"method": __doc__.split("\n\n", 2)[2].strip(), "forms": per_form, "servers": servers}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", type=Path, nargs="?")
    parser.add_argument("--servers", type=int, default=3)
    parser.add_argument("--requests", type=int, default=12000)
    parser.add_argument("--out", type=Path, default=Path("lab/results/shared_vectors"))
    parser.add_argument("--summarize", type=Path, default=None, help="only rewrite summary.json of this folder")
    args = parser.parse_args()
    if args.summarize:
        print(json.dumps(summarize(args.summarize)["forms"], indent=2))
        return 0
    if args.bundle is None:
        parser.error("BUNDLE is required unless --summarize")
    args.out.mkdir(parents=True, exist_ok=True)
    here = Path(__file__).parent
    with tempfile.TemporaryDirectory(dir=args.bundle.parent) as tmp:  # same filesystem: hard links
        forms = make_forms(args.bundle, Path(tmp))
        for i in range(1, args.servers + 1):
            for form, folder in forms.items():
                subprocess.run([sys.executable, str(here / "serve_threads.py"), str(folder), "--modes", *MODES,
                                "--requests", str(args.requests), "--out", str(args.out / f"{form}-{i}.json")],
                               check=True)
    print(json.dumps(summarize(args.out)["forms"], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
