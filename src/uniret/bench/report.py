"""bench.json and bench.md: every section, the machine, the versions, and the targets reported against."""

from __future__ import annotations

from pathlib import Path

from uniret.config.serving import BenchTargets
from uniret.utils.files import atomic_write_json, atomic_write_text

JSON_FILE = "bench.json"
MD_FILE = "bench.md"
GROWTH_JSON, GROWTH_MD = "growth.json", "growth.md"


def targets(result: dict, goal: BenchTargets) -> list[dict]:
    """The project's speed targets, measured value next to each (reported, never asserted)."""
    modes = result.get("modes") or {}
    enc = (result.get("encoders") or {}).get("query_batch1") or {}
    http = result.get("http") or {}
    levels = http.get("levels") or {}
    uni_ratio = (modes.get("uni") or {}).get("p50_vs_bm25")
    fast_ratio = (modes.get("hybrid_fast") or {}).get("p50_vs_bm25")
    speedup = enc.get("onnx_speedup_p50")
    # the targets are stated at goal.http_clients; other runs report their busiest level
    stated = str(goal.http_clients)
    top = stated if stated in levels else (max(levels, key=int) if levels else None)
    p95 = levels[top]["p95_ms"] if top else None
    qps = levels[top]["qps"] if top else None
    reference = ((http.get("reference") or {}).get("levels") or {}).get(top or "") or {}
    qps_ratio = round(qps / reference["qps"], 3) if qps and reference.get("qps") else None
    # HTTP's own cost: the 1-client p50 over the same mode's in-process p50 (bench_modes)
    in_process = (modes.get(http.get("served_mode") or "") or {}).get("p50_ms")
    one = levels.get("1") or {}
    overhead = round(one["p50_ms"] - in_process, 3) if in_process is not None and one.get("p50_ms") is not None else None

    def row(name: str, value, op: str, bound: float) -> dict:
        met = None if value is None else (value <= bound if op == "<=" else value >= bound if op == ">=" else value < bound)
        return {"target": name, "measured": value, "bound": f"{op} {bound}", "met": met}

    return [
        row("uni p50 / bm25 p50 (query encoding included)", uni_ratio, "<=", goal.uni_vs_bm25_p50),
        row("hybrid_fast p50 / bm25 p50 (static query encoding included)", fast_ratio, "<=", goal.fast_vs_bm25_p50),
        row("ONNX query encoder speed-up over torch eager (batch 1, p50)", speedup, ">=", goal.onnx_speedup_p50),
        row(f"serving p95 ms at {top or '?'} clients", p95, "<", goal.http_p95_ms),
        row(f"serving QPS at {top or '?'} clients", qps, ">=", goal.http_qps),
        row(f"serving QPS / the same server's in bm25 mode at {top or '?'} clients", qps_ratio, ">=",
            goal.http_qps_vs_reference),
        row("HTTP p50 at 1 client - in-process p50, ms", overhead, "<=", goal.http_p50_overhead_ms),
    ]


def _table(headers: list[str], rows: list[list]) -> list[str]:
    def cell(v) -> str:
        if v is None:
            return "-"
        return f"{v:g}" if isinstance(v, float) else str(v)

    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)] + [
        "| " + " | ".join(cell(v) for v in r) + " |" for r in rows
    ]


def _skipped(section) -> str | None:
    return section.get("skipped") if isinstance(section, dict) else "not run"


def _growth_lines(growth: dict) -> list[str]:
    """bench.md's pointer to the growth curve (growth.md holds it)."""
    lines = ["", "## The served mode as the corpus grows (synthetic corpora)", ""]
    if not growth or _skipped(growth):  # an older report, or a run without the section
        return lines + [f"skipped: {_skipped(growth) or 'not run'}"]
    if "served_switches" not in growth["rows"][0]:  # a curve of an earlier kind (E52's first runs, or before)
        return lines + [f"an earlier curve of the bare indexes; the served mode's is in [{GROWTH_MD}]({GROWTH_MD})."]
    return lines + [f"[{GROWTH_MD}]({GROWTH_MD}): " + ", ".join(
        f"{r['docs']} docs: hybrid_fast {served_p50s(r)[2]}x Lucene BM25's p50" for r in growth["rows"]) + "."]


def served_p50s(row: dict) -> tuple[float, float, float]:
    """A growth row's (Lucene BM25 p50 ms, served hybrid_fast p50 ms, their ratio): timed side by side
    where the row has it (E62), else the two mode-by-mode timings (curves from before E62)."""
    side = row.get("side_by_side")
    if side:
        return side["lucene_bm25_p50_ms"], side["hybrid_fast_p50_ms"], side["p50_vs_lucene_bm25"]
    fast = row["modes"]["hybrid_fast"]
    return row["modes"]["lucene_bm25"]["p50_ms"], fast["served"]["p50_ms"], fast["served_p50_vs_lucene_bm25"]


def _side_by_side(row: dict) -> str:
    side = row.get("side_by_side")
    if not side:
        return "-"
    rounds = side["per_round_vs_lucene_bm25"]
    return f"{side['p50_vs_lucene_bm25']} ({min(rounds)}-{max(rounds)})"


def _jvm_warmup_note(growth: dict) -> str:
    """How the JVM was warmed before the first size's timings ('' for a run before E100)."""
    warm = (growth["rows"][0] if growth["rows"] else {}).get("jvm_warmup")
    return (f" Before the first size, {warm['queries']} untimed BM25 searches ({warm['seconds']} s) let the JVM "
            "compile Lucene's paths (E100)." if warm else "")


def render_growth(growth: dict) -> str:
    """growth.md: per size, each route's p50 in both forms beside Lucene BM25, agreement, memory, build cost."""
    m = growth.get("machine", {})
    lines = ["# The served mode as the corpus grows", "", growth["method"], "",
             f"{growth['queries']} real queries ({growth.get('dataset', 'scifact')} test), batch 1; "
             f"{growth['real_docs']} real documents copied; routes taken to depth {growth['fast_depth']} as in "
             f"hybrid_fast, hybrid_fast and Lucene BM25 to 10. Pruning switch (params retrieval.pruning): "
             f"{growth['pruning']}.{_jvm_warmup_note(growth)}", "",
             f"Machine: {m.get('cpu_model', '?')}, {m.get('cpu_cores', '?')} cores, {m.get('memory_gb', '?')} GB; "
             f"run at {growth.get('started_at', '?')} in {growth.get('seconds', '?')} s.", "",
             f"![growth]({growth['plot']})", "", "## Latency (p50 ms; p95 for the served hybrid_fast)", "",
             "Each searcher is timed over all the queries, one searcher after another; *side by side*, Lucene BM25 "
             "and the served hybrid_fast answer each query one after the other, round after round, so the machine's "
             "drift falls on both: the ratio that holds between runs (in brackets: its range over the rounds).", ""]
    routes = ["hybrid_fast", "bm25_memory", "lexical_static", "dense_feedback"]
    rows = growth["rows"]
    head = ["docs", "Lucene BM25", "hybrid_fast served (p95)", "served / BM25", "served / BM25 side by side (rounds)",
            "served: cut lists, IVF", "hybrid_fast exh. / pruned"]
    head += [f"{r} exh. / pruned" for r in routes[1:]]
    body = []
    for r in rows:
        fast = r["modes"]["hybrid_fast"]
        switches = r["served_switches"]
        body.append([r["docs"], r["modes"]["lucene_bm25"]["p50_ms"], f"{fast['served']['p50_ms']} ({fast['served']['p95_ms']})",
                     fast["served_p50_vs_lucene_bm25"], _side_by_side(r), f"{_yes(switches['sparse'])}, {_yes(switches['dense'])}",
                     *[f"{r['modes'][x]['exhaustive']['p50_ms']} / {r['modes'][x]['pruned']['p50_ms']}" for x in routes]])
    lines += _table(head, body)
    lines += ["", "## Agreement, memory, build cost", "",
              "Top-10 agreement: the pruned form's top 10 against the exhaustive form's, mean over queries "
              "(dense_feedback's pruned form takes its feedback from the pruned BM25 route; the IVF shortlist "
              "alone is in the nprobe table). Served B/doc: the arrays serving holds at that size, in the form "
              "params choose (RAM; Lucene's BM25 index is on disk, mapped). RSS B/doc: the bench process's "
              "resident memory added while building both forms (JVM included); peak: the process's.", ""]
    lines += _table(["docs", "served hybrid_fast top-10 agreement", *[f"{x} pruned top-10 agreement" for x in routes],
                     "served B/doc", "RSS B/doc",
                     "peak RSS MB", "Lucene BM25 disk B/doc", "build s/doc (Lucene, weights, impacts, vectors, searchers)"],
                    [[r["docs"], r["modes"]["hybrid_fast"]["served_top10_agreement"],
                      *[r["modes"][x]["top10_agreement"] for x in routes], r["served_bytes_per_doc"]["total"], r["rss_bytes_per_doc"], r["peak_rss_mb"],
                      r["bytes_per_doc"]["lucene_bm25_disk"],
                      ", ".join(f"{v:.2g}" for v in r["build_seconds_per_doc"].values())] for r in rows])
    parts = list(rows[-1]["served_bytes_per_doc"])
    lines += ["", "Served bytes per document by structure:", ""]
    lines += _table(["docs", *parts], [[r["docs"], *[r["served_bytes_per_doc"].get(p, "-") for p in parts]] for r in rows])
    lines += ["", "## Sparse routes: share of each posting list kept, documents rescored", "",
              "p50 ms and top-10 agreement with the exhaustive form; hybrid_fast with the dense route as params "
              "choose at that size.", ""]
    grid = rows[0]["posting_share"]
    lines += _table(["docs", *[f"{g['posting_share']:g} / {g['candidates']}: bm25, lexical, hybrid" for g in grid]],
                    [[r["docs"], *[" / ".join(f"{g[x]['p50_ms']} ms {g[x]['top10_agreement']}"
                                              for x in ("bm25_memory", "lexical_static", "hybrid_fast"))
                                   for g in r["posting_share"]]] for r in rows])
    lines += ["", "## Dense IVF shortlist: lists probed", ""]
    lines += ["The dense_feedback route alone (its BM25 feedback from the exhaustive BM25 route): the candidates the "
              "PQ codes of the IVF lists probed name (nprobe, at most the number of lists; retrieval.pruning."
              "ivf_candidates x the depth), scored exactly, against the scan of every vector.", ""]
    lines += _table(["docs", "lists", *[f"nprobe {p['nprobe']}: p50 ms, agreement" for p in rows[-1]["ivf_nprobe"]]],
                    [[r["docs"], r["ivf_nprobe"][0]["nlist"], *[f"{p['p50_ms']}, {p['top10_agreement']}" for p in r["ivf_nprobe"]]]
                     for r in rows])
    lines += ["", "## Synthetic corpus shape (KS statistic against the real corpus; 0 = same distribution)", ""]
    keys = list(rows[0]["shape_ks"])
    lines += _table(["docs", *keys], [[r["docs"], *[r["shape_ks"][k] for k in keys]] for r in rows])
    return "\n".join(lines) + "\n"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def write_growth(growth: dict, out_dir: Path) -> tuple[Path, Path]:
    """growth.json and growth.md, atomically, into `out_dir` (growth.png is already there)."""
    out_dir = Path(out_dir)
    return atomic_write_json(out_dir / GROWTH_JSON, growth), atomic_write_text(out_dir / GROWTH_MD, render_growth(growth))


def render_markdown(result: dict) -> str:
    """The human-readable report."""
    m = result["machine"]
    lines = [
        "# uniret benchmarks",
        "",
        f"Bundle `{result['bundle']['path']}` (version {result['bundle']['version']}, {result['bundle']['docs']} docs); "
        f"queries: {result['queries']['dataset']} {result['queries']['split']} ({result['queries']['count']}); "
        f"run at {result['started_at']} in {result['seconds']} s.",
        "",
        f"Machine: {m['cpu_model']}, {m['cpu_cores']} cores ({m['cpu_cores_usable']} usable), "
        f"{m['memory_gb']} GB, {m['os']}, Python {m['python']}, faiss SIMD {m.get('faiss_simd', '?')}.",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()) + ".",
        "",
        "## Targets (reported, not asserted)",
        "",
        *_table(["target", "measured", "bound", "met"],
                [[t["target"], t["measured"], t["bound"], t["met"]] for t in result["targets"]]),
    ]
    modes = result.get("modes") or {}
    eval_key = next((k for r in modes.values() if isinstance(r, dict) for k in r if k.startswith("ndcg@")), "ndcg@10")
    lines += ["", "## Retrieval modes (batch 1, query encoding included)", ""]
    if _skipped(modes):
        lines.append(f"skipped: {_skipped(modes)}")
    else:
        lines += _table(["mode", "p50 ms", "p95 ms", "p99 ms", "QPS", "p50 / bm25", eval_key],
                        [[mode, r.get("p50_ms"), r.get("p95_ms"), r.get("p99_ms"), r.get("qps"), r.get("p50_vs_bm25"),
                          r.get(eval_key) if "skipped" not in r else r["skipped"]] for mode, r in modes.items()])
    enc = result.get("encoders") or {}
    lines += ["", "## Encoders: torch eager vs ONNX Runtime", ""]
    if _skipped(enc):
        lines.append(f"skipped: {_skipped(enc)}")
    else:
        q, c = enc.get("query_batch1", {}), enc.get("corpus", {})
        rows = [[name, q.get(name, {}).get("p50_ms"), q.get(name, {}).get("p95_ms"), c.get(name, {}).get("docs_per_s")]
                for name in ("torch", "onnx") if name in q or name in c]
        lines += _table(["encoder", "query p50 ms (batch 1)", "query p95 ms", "corpus docs/s"], rows)
        lines += ["", f"ONNX speed-up: queries x{q.get('onnx_speedup_p50')}, corpus x{c.get('onnx_speedup')}"
                  + (f" ({enc['torch_skipped']})" if enc.get("torch_skipped") else "")]
    sizes = result.get("sizes") or {}
    lines += ["", "## Index sizes", ""]
    if _skipped(sizes):
        lines.append(f"skipped: {_skipped(sizes)}")
    else:
        lines += _table(["part", "bytes", "bytes/doc"],
                        [[f"{name} ({p['what']})", p["bytes"], p["bytes_per_doc"]] for name, p in sizes["parts"].items()])
        lines += ["", f"Mean active terms per document: {sizes.get('mean_active_terms_doc')}; "
                      f"bundle total {sizes['total_bytes']} bytes."]
    curve = result.get("top_n") or {}
    lines += ["", "## Top-N sparsification (UnifieR Table 6)", ""]
    if _skipped(curve):
        lines.append(f"skipped: {_skipped(curve)}")
    else:
        key = next((k for k in curve["rows"][0]["lexical"] if k.startswith("ndcg@")), eval_key) if curve["rows"] else eval_key
        lines += [curve["note"], ""]
        lines += _table(["N", "terms/doc", "bytes/doc", "lexical QPS", f"lexical {key}", "uni QPS", f"uni {key}"],
                        [[r["top_n"], r["mean_active_terms_doc"], r["bytes_per_doc_sparse"], r["lexical"]["qps"],
                          r["lexical"][key], r["uni"]["qps"], r["uni"][key]] for r in curve["rows"]])
    lines += _growth_lines(result.get("growth") or {})
    http = result.get("http") or {}
    lines += ["", "## Serving over HTTP (uvicorn on 127.0.0.1)", ""]
    if _skipped(http):
        lines.append(f"skipped: {_skipped(http)}")
    else:
        mode = http["mode"] or f"the bundle default ({http.get('served_mode') or '?'})"
        workers = workers_phrase(http.get("workers")) or "uvicorn workers: not recorded"
        lines += [f"mode {mode}, k={http['k']}, {workers}; server RSS (all its processes) taken right after each level",
                  ""]
        reference = http.get("reference") or {}
        ref = reference.get("levels") or {}
        # the same server and load in the reference mode, level by level: the HTTP stack's ceiling here
        extra = [f"{reference.get('mode')} p95 ms", f"{reference.get('mode')} QPS"] if ref else []
        rows = []
        for c, r in http["levels"].items():
            row = [c, r["n"], r["p50_ms"], r["p95_ms"], r["p99_ms"], r["qps"], r["failed"], r.get("server_rss_mb")]
            if ref:
                row += [ref[c]["p95_ms"], ref[c]["qps"]] if c in ref else ["", ""]
            rows.append(row)
        lines += _table(["clients", "requests", "p50 ms", "p95 ms", "p99 ms", "QPS", "failed", "server MB (PSS)", *extra], rows)
        if ref:
            lines += ["", f"The last two columns: the same server and load in mode {reference.get('mode')} "
                          "(the HTTP stack's ceiling on this machine)."]
        lines += _rounds_lines(http["levels"], ref, reference.get("mode"))
    return "\n".join(lines) + "\n"


def _rounds_lines(levels: dict, ref: dict, ref_mode: str | None) -> list[str]:
    """Per level, each round's QPS and how its connections landed on the workers (bench.http.rounds)."""
    rows = []
    for c, r in levels.items():
        if (r.get("rounds") or 1) < 2:
            continue
        row = [c, " / ".join(str(q) for q in r["qps_by_round"]),
               " ".join("+".join(map(str, w)) or "?" for w in r["connections_by_worker"])]
        if c in ref:
            row.append(" / ".join(str(q) for q in ref[c].get("qps_by_round", [])))
        rows.append(row)
    if not rows:
        return []
    head = ["clients", "QPS by round", "connections per worker by round"] + ([f"{ref_mode} QPS by round"] if ref else [])
    return ["", "Rounds (the modes take turns, new connections each round; QPS above is over all rounds):", "",
            *_table(head, [row + [""] * (len(head) - len(row)) for row in rows])]


def workers_phrase(n: int | None) -> str:
    """'1 uvicorn worker', '2 uvicorn workers'; '' when the count was not recorded."""
    return f"{n} uvicorn worker{'s' if n != 1 else ''}" if n else ""


def write_results(result: dict, out_dir: Path) -> tuple[Path, Path]:
    """Write bench.json and bench.md atomically into `out_dir`."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return atomic_write_json(out_dir / JSON_FILE, result), atomic_write_text(out_dir / MD_FILE, render_markdown(result))
