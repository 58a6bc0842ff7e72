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
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ab_summary import MODES, add_ab_args, print_summary, summarize_only, summarize_servers

FORMS = ("mapped", "private")


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
    return summarize_servers(out, FORMS, __doc__.split("\n\n", 2)[2].strip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", type=Path, nargs="?")
    add_ab_args(parser, "lab/results/shared_vectors")
    args = parser.parse_args()
    if summarize_only(args, summarize):
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
    return print_summary(summarize(args.out))


if __name__ == "__main__":
    raise SystemExit(main())
