"""The sparse routes' posting-list kernel at a million documents, one checkout against another (E54).

    python lab/sparse_kernel_ab.py dump [--docs 1000000] [--dir .cache/sparse_kernel_ab]
    python lab/sparse_kernel_ab.py time --label NAME [--dir ...] [--out lab/results/sparse_kernel_ab.json]

`dump` builds the synthetic corpus of the growth bench once (uniret.bench.growth.index_corpus: the
production bundle's documents copied, Lucene BM25 over the texts, its term weights read back, the
impacts in memory), runs the 100 growth queries through `hybrid_fast` with every posting summed, and
saves each sparse route's [docs, terms] weights and the calls it made (terms, weights, depth, scale),
as pruning_at_scale.py records them. `time` replays those calls, batch 1, through
`retrieval.postings` of the checkout it runs in: every posting summed, every posting read by
MaxScore (lab/maxscore.py, E55) and the cut lists of `retrieval.pruning`, three rounds, p50 and p95 per route, and the
share of calls each form ranks exactly as every posting summed does, and appends them under `--label`. Run `time`
in two checkouts (e.g. a git worktree of the previous commit with its own venv) against one dump,
one after the other on an idle machine, to compare their kernels on the same calls.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROUTES = {"bm25_memory": "bm25.npz", "lexical_static": "impacts.npz"}


def dump(args: argparse.Namespace) -> None:
    """The corpus's sparse weights and each route's recorded calls, in `args.dir`."""
    sys.path.insert(0, str(Path(__file__).parent))
    from pruning_at_scale import _Recorder, growth_corpus

    from uniret.bench.growth import index_corpus
    from uniret.retrieval.modes import build_searchers
    from uniret.utils.files import make_temp_dir

    bundle, queries, corpus, _ = growth_corpus(args.docs)
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    work = make_temp_dir(str(out), "build-")
    try:
        index = index_corpus(corpus, bundle, work, {"build_seconds_per_doc": {}})
        retrieval = bundle.retrieval
        exhaustive = dataclasses.replace(retrieval, memory_max_docs=max(args.docs, retrieval.memory_max_docs),
                                         pruning=dataclasses.replace(retrieval.pruning, sparse_min_docs=None,
                                                                     dense_min_docs=None, parallel_min_docs=None))
        fast = build_searchers(index, exhaustive, None, bundle.bm25, modes=["hybrid_fast"])["hybrid_fast"]
        holders = {"bm25_memory": fast.searchers[0], "lexical_static": index.impacts}
        recorders = {}
        for name, holder in holders.items():
            recorders[name] = holder.postings = _Recorder(holder.postings)
        for qid, text in queries.items():
            fast.search({qid: text}, 10)
        sp.save_npz(out / ROUTES["bm25_memory"], holders["bm25_memory"].doc_weights.tocsr(), compressed=False)
        sp.save_npz(out / ROUTES["lexical_static"], index.impacts.doc_impacts.tocsr(), compressed=False)
        np.save(out / "ties.npy", holders["bm25_memory"].ties)
        with open(out / "calls.pkl", "wb") as f:
            pickle.dump({name: r.calls for name, r in recorders.items()}, f)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"written {out}")


def _timed(search, calls, rounds: int) -> tuple[dict, list]:
    """(p50/p95 ms over `rounds` passes of `calls`, the rows each call returned in the last pass)."""
    for call in calls[:5]:  # warm: the kernels compiled or loaded, the pages touched
        search(*call)
    seconds, rows = [], []
    for _ in range(rounds):
        rows = []
        for call in calls:
            start = time.perf_counter()
            rows.append(search(*call)[0])
            seconds.append(time.perf_counter() - start)
    return ({"p50_ms": round(float(np.median(seconds)) * 1e3, 3),
             "p95_ms": round(float(np.percentile(seconds, 95)) * 1e3, 3)}, rows)


def time_routes(args: argparse.Namespace) -> None:
    """Each route's calls through this checkout's posting lists, whole and cut; appended under `args.label`."""
    from uniret.bench.machine import machine_info
    from uniret.config import load_params
    from uniret.retrieval.postings import Postings, pruned_postings

    sys.path.insert(0, str(Path(__file__).parent))
    from maxscore import MaxScorePostings

    pruning = load_params(None, "cpu").section("retrieval").pruning
    where = Path(args.dir)
    with open(where / "calls.pkl", "rb") as f:
        calls = pickle.load(f)
    ties = np.load(where / "ties.npy")
    entry: dict = {"label": args.label, "machine": machine_info(), "rounds": args.rounds,
                   "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for name, file in ROUTES.items():
        weights = sp.load_npz(where / file).tocsr().astype(np.float32)
        n = weights.shape[0]
        full = Postings(weights)
        forms = {"every posting": full, "every posting, MaxScore": MaxScorePostings(full),
                 "cut lists": pruned_postings(weights, pruning.posting_keep(n), pruning.candidates(n))}
        entry[name] = {"docs": n}
        found = {}
        for form, p in forms.items():
            entry[name][form], found[form] = _timed(lambda t, w, k, s, r, p=p: p.top_k(t, w, k, ties, s, r),
                                                    calls[name], args.rounds)
        for form, rows in found.items():  # the share of calls each form ranks as every posting summed does
            same = [np.array_equal(a, b) for a, b in zip(rows, found["every posting"], strict=True)]
            entry[name][form]["same_ranking"] = round(float(np.mean(same)), 4)
        print(name, entry[name], flush=True)
    out = Path(args.out)
    done = json.loads(out.read_text()) if out.exists() else {"method": " ".join(__doc__.split("\n\n")[1].split()),
                                                             "runs": []}
    done["runs"].append(entry)
    out.write_text(json.dumps(done, indent=1))
    print(f"written {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("dump", help="build the corpus and record the routes' calls")
    make.add_argument("--docs", type=int, default=1_000_000)
    run = sub.add_parser("time", help="replay the calls through this checkout's posting lists")
    run.add_argument("--label", required=True)
    run.add_argument("--rounds", type=int, default=3)
    run.add_argument("--out", default="lab/results/sparse_kernel_ab.json")
    for p in (make, run):
        p.add_argument("--dir", default=".cache/sparse_kernel_ab")
    args = parser.parse_args()
    dump(args) if args.command == "dump" else time_routes(args)


if __name__ == "__main__":
    main()
