"""hybrid_fast with its dense route scanning every vector or shortlisted by IVF codes, below 100k (E61).

`retrieval.pruning.dense_min_docs` switches the dense route from scoring every vector (the ranking
Milvus's FLAT index gives, E51) to the IVF shortlist's candidates scored exactly; E56 measured the
shortlist at 100k-1M only, and E60 found the served mode at 2.8x Lucene BM25 at 30k, where every
vector is still scanned. For each `--docs` size the growth bench's synthetic corpus is indexed and
served as params serve it (fast_candidates_ab.served_at, built with the routes on a worker), and each
growth query is searched by Lucene BM25 (top 10) and by `hybrid_fast` with each dense form, routes in
turn and with lexical_static on the worker, query by query for `--rounds` rounds. Writes p50/p95 per
arm and its ratio to Lucene's p50, the paired per-query differences between the forms, the fused top 10's agreement between the two dense forms, and the
seconds the IVF index takes to build at load, per size, to lab/results/dense_min_docs_ab.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

DENSE_FORMS = (("every vector", False), ("IVF shortlist", True))  # (label, ServedForms.use's dense switch)


def dense_arms(forms, lucene, top: int) -> dict:
    """Lucene BM25 and `forms.fast` with each dense form, routes in turn and on the worker: each arm
    switches the dense form before it searches (parallel_routes_ab.route_arms for the worker)."""
    from parallel_routes_ab import IN_TURN, SIDE_BY_SIDE, route_arms

    base = route_arms(forms.fast, lucene, top)

    def switched(search, dense: bool):
        def arm(batch):
            forms.use(False, dense)
            return search(batch)
        return arm

    arms = {name: search for name, search in base.items() if name not in (IN_TURN, SIDE_BY_SIDE)}
    for label, dense in DENSE_FORMS:
        for name in (IN_TURN, SIDE_BY_SIDE):
            arms[f"{name}, dense: {label}"] = switched(base[name], dense)
    return arms


def fused_agreement(forms, queries: list[tuple[str, str]], top: int) -> float:
    """Mean top-10 agreement of hybrid_fast with the IVF shortlist against hybrid_fast scanning every vector."""
    from uniret.bench.growth import top10_agreement

    runs = {}
    for label, dense in DENSE_FORMS:
        forms.use(False, dense)
        runs[label] = {qid: forms.fast.search({qid: text}, top)[qid] for qid, text in queries}
    return top10_agreement(runs[DENSE_FORMS[1][0]], runs[DENSE_FORMS[0][0]])


def pairs(seconds: dict[str, list[float]]) -> dict[str, dict]:
    """The paired per-query differences between the dense forms (each worker setting) and between the
    worker settings (each dense form): fast_candidates_ab.paired, keyed "paired: FIRST - SECOND"."""
    from fast_candidates_ab import paired
    from parallel_routes_ab import IN_TURN, SIDE_BY_SIDE

    (scan, _), (ivf, _) = DENSE_FORMS
    couples = [(f"{w}, dense: {scan}", f"{w}, dense: {ivf}") for w in (IN_TURN, SIDE_BY_SIDE)]
    couples += [(f"{IN_TURN}, dense: {d}", f"{SIDE_BY_SIDE}, dense: {d}") for d in (scan, ivf)]
    return {f"paired: {first} - {second}": paired(seconds, first, second) for first, second in couples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[10_000, 20_000, 30_000, 50_000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default="lab/results/dense_min_docs_ab.json")
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).parent))
    from fast_candidates_ab import arm_figures, report_per_size

    from uniret.bench import growth
    from uniret.bench.modes import time_side_by_side
    from uniret.retrieval.dense import build_ivf_shortlist

    def measure(queries, cfg, forms, pruning) -> dict:
        ivf = forms.ivf_dense.fast_scan
        seconds = time_side_by_side(dense_arms(forms, forms.searchers["bm25"], growth.TOP), dict(queries),
                                    cfg.growth.warmup, args.rounds)
        agreement = fused_agreement(forms, queries, growth.TOP)
        start = time.perf_counter()  # what loading a bundle of this size adds (modes.ivf_index)
        build_ivf_shortlist(forms.index.doc_vectors, pruning.ivf_points_per_list, pruning.ivf_nprobe,
                            pruning.ivf_train_points, pruning.seed)
        return {"nlist": ivf.nlist, "nprobe": ivf.nprobe, "ivf_candidates": forms.ivf_dense.shortlist,
                "ivf_build_s": round(time.perf_counter() - start, 2),
                "fused_top10_agreement_ivf_vs_every_vector": agreement, "arms": arm_figures(seconds, args.rounds),
                **pairs(seconds)}

    report_per_size(__doc__, args.docs, args.rounds, args.out, measure)

if __name__ == "__main__":
    main()
