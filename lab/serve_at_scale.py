"""The server on a synthetic bundle of a million documents: memory, latency and a hot reload (E52).

    python lab/serve_at_scale.py build --docs 1000000 --out .cache/scale/bundle-1m [--bundle B]
    python lab/serve_at_scale.py serve .cache/scale/bundle-1m [--queries 200] [--out lab/results/serve_at_scale.json]

build: the production bundle's query side (ONNX graphs, tokenizer, static tables, manifest) with the
corpus structures of a synthetic corpus (uniret.bench.synthetic): docids.json, dense.faiss (flat),
impacts.npz, bm25/ (Lucene over the synthetic texts) and its bm25_weights.npz, then SHA256SUMS; its
seconds per structure and peak RSS (the index stage's writing of a bundle, without the encoding). No
Lucene impact index: Anserini indexes an impact as its token repeated `weight` times, about 25
billion tokens at this size (the in-memory impact route serves, retrieval.memory_max_docs).
serve: `uniret serve --bundle` in a subprocess; its RSS after loading, batch-1 /search latency of the
served mode, then POST /admin/reload of the same folder while a client keeps searching: the server's
RSS every 0.2 s during the swap, the requests answered and failed meanwhile, and the reload's time.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import psutil

QUERY_SIDE = ("onnx", "tokenizer", "static", "manifest.json")


def build(args: argparse.Namespace) -> dict:
    import scipy.sparse as sp

    from uniret.bench.growth import real_corpus
    from uniret.bench.synthetic import SyntheticCorpus
    from uniret.data.beir import Document
    from uniret.lexical.bm25 import index_documents
    from uniret.registry.integrity import write_checksums
    from uniret.retrieval.bundle import open_bundle
    from uniret.retrieval.bundle_write import write_bm25_weights
    from uniret.retrieval.faiss_loader import faiss
    from uniret.utils.files import make_temp_dir, replace_dir

    source = Path(args.bundle or _production())
    bundle = open_bundle(source)
    corpus = SyntheticCorpus(real_corpus(bundle, Path(args.data)), args.docs, 0.1, 0.2, seed=13)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(out.parent, out.name + ".")
    seconds = {}
    for name in QUERY_SIDE:
        (shutil.copytree if (source / name).is_dir() else shutil.copy2)(source / name, tmp / name)
    (tmp / "docids.json").write_text(json.dumps(corpus.docids))
    start = time.perf_counter()
    flat = faiss.IndexFlatIP(corpus.real.vectors.shape[1])
    flat.add(corpus.dense())
    faiss.write_index(flat, str(tmp / "dense.faiss"))
    del flat
    sp.save_npz(tmp / "impacts.npz", corpus.impacts(), compressed=True)
    seconds["vectors_and_impacts"] = round(time.perf_counter() - start, 1)
    start = time.perf_counter()
    index_documents((Document(i, "", t) for i, t in corpus.texts()), tmp / "bm25", bundle.bm25, total=args.docs)
    seconds["lucene_bm25"] = round(time.perf_counter() - start, 1)
    start = time.perf_counter()
    write_bm25_weights(tmp, corpus.docids, bundle.bm25)
    seconds["bm25_weights"] = round(time.perf_counter() - start, 1)
    write_checksums(tmp)
    replace_dir(tmp, out)
    from uniret.serving.source import bundle_version

    return {"bundle": str(out), "docs": args.docs, "source_version": bundle_version(source), "build_seconds": seconds,
            "disk_bytes_per_doc": round(sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / args.docs, 1),
            # the build's high-water mark: this process (Lucene's indexer runs in its JVM) and any children
            "peak_rss_mb": {who: round(resource.getrusage(flag).ru_maxrss / 1024, 1) for who, flag in
                            (("process", resource.RUSAGE_SELF), ("children", resource.RUSAGE_CHILDREN))}}


def _production() -> Path:
    from uniret.serving.source import BundleSource

    found = BundleSource(registry_root=Path("registry")).production()
    if found is None:
        raise SystemExit("registry/production.json names no bundle; pass --bundle")
    return found[0]


def serve(args: argparse.Namespace) -> dict:
    from uniret.bench.http_client import post_json
    from uniret.bench.runner import bench_config, bench_queries
    from uniret.bench.server import LocalServer
    from uniret.bench.stats import latency_summary
    from uniret.config import load_params

    params = load_params(args.params, None)
    texts = list(bench_queries(Path(args.data), bench_config(params))[0].values())[: args.queries]
    token = "scale-measurement"
    server = LocalServer(["--bundle", str(args.bundle)], args.params, env={"UNIRET_ADMIN_TOKEN": token})
    start = time.perf_counter()
    server.start(timeout_s=1800)
    out: dict = {"load_seconds": round(time.perf_counter() - start, 1)}
    proc = psutil.Process(server.proc.pid)

    def rss_mb() -> float:
        return round(sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20, 1)

    def search(text: str) -> tuple[float, int]:
        begin = time.perf_counter()
        status, _ = post_json("127.0.0.1", server.port, "/search", {"query": text, "k": 10})
        return time.perf_counter() - begin, status

    try:
        out["rss_mb_loaded"] = rss_mb()
        for text in texts[:20]:  # warm-up
            search(text)
        timed = [search(t) for t in texts]
        out["search"] = latency_summary([s for s, _ in timed])
        out["search"]["failed"] = sum(status != 200 for _, status in timed)
        out["rss_mb_after_search"] = rss_mb()
        during: list[tuple[float, int]] = []
        samples: list[float] = []
        done = threading.Event()

        def client() -> None:
            i = 0
            while not done.is_set():
                try:
                    during.append(search(texts[i % len(texts)]))
                except OSError:
                    during.append((float("nan"), 0))
                i += 1

        def sampler() -> None:
            while not done.is_set():
                samples.append(rss_mb())
                time.sleep(0.2)

        workers = [threading.Thread(target=client), threading.Thread(target=sampler)]
        for w in workers:
            w.start()
        status, body = post_json("127.0.0.1", server.port, "/admin/reload", None,
                                 headers={"Authorization": f"Bearer {token}"}, timeout_s=1800)
        done.set()
        for w in workers:
            w.join()
        answered = [s for s, st in during if st == 200]
        out["reload"] = {"status": status, "took_ms": (body or {}).get("took_ms"), "rss_mb_peak": max(samples),
                         "rss_mb_samples": len(samples), "requests": len(during),
                         "failed": sum(st != 200 for _, st in during), "search_during": latency_summary(answered)}
        out["rss_mb_after_reload"] = rss_mb()
    finally:
        server.stop()
    out["docs"] = len(json.loads((Path(args.bundle) / "docids.json").read_text()))
    out["rss_bytes_per_doc_loaded"] = round(out["rss_mb_loaded"] * 2**20 / out["docs"], 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write a synthetic bundle")
    b.add_argument("--docs", type=int, required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--bundle", default=None, help="the real bundle copied (default: the registry's production)")
    s = sub.add_parser("serve", help="serve a bundle, measure, reload it")
    s.add_argument("bundle")
    s.add_argument("--queries", type=int, default=200)
    s.add_argument("--params", default="params.yaml")
    for p in (b, s):
        p.add_argument("--data", default="../shared/data")
        p.add_argument("--out" if p is s else "--result", default="lab/results/serve_at_scale.json")
    args = parser.parse_args()
    from uniret.bench.machine import machine_info

    result = build(args) if args.command == "build" else serve(args)
    result["machine"] = machine_info()
    path = Path(args.result if args.command == "build" else args.out)
    data = json.loads(path.read_text()) if path.is_file() else {}
    data[args.command] = result
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=lambda x: x.item() if isinstance(x, np.generic) else str(x)) + "\n")
    print(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
