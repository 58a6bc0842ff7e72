"""bench.json and bench.md: every section, the machine, the versions, and the targets reported against."""

from __future__ import annotations

from pathlib import Path

from uniret.config.serving import BenchTargets
from uniret.utils.files import atomic_write_json, atomic_write_text

JSON_FILE = "bench.json"
MD_FILE = "bench.md"


def targets(result: dict, goal: BenchTargets) -> list[dict]:
    """The project's speed targets, measured value next to each (reported, never asserted)."""
    modes = result.get("modes") or {}
    enc = (result.get("encoders") or {}).get("query_batch1") or {}
    levels = ((result.get("http") or {}).get("levels")) or {}
    uni_ratio = (modes.get("uni") or {}).get("p50_vs_bm25")
    fast_ratio = (modes.get("hybrid_fast") or {}).get("p50_vs_bm25")
    speedup = enc.get("onnx_speedup_p50")
    # the targets are stated at goal.http_clients; other runs report their busiest level
    stated = str(goal.http_clients)
    top = stated if stated in levels else (max(levels, key=int) if levels else None)
    p95 = levels[top]["p95_ms"] if top else None
    qps = levels[top]["qps"] if top else None

    def row(name: str, value, op: str, bound: float) -> dict:
        met = None if value is None else (value <= bound if op == "<=" else value >= bound if op == ">=" else value < bound)
        return {"target": name, "measured": value, "bound": f"{op} {bound}", "met": met}

    return [
        row("uni p50 / bm25 p50 (query encoding included)", uni_ratio, "<=", goal.uni_vs_bm25_p50),
        row("hybrid_fast p50 / bm25 p50 (static query encoding included)", fast_ratio, "<=", goal.fast_vs_bm25_p50),
        row("ONNX query encoder speed-up over torch eager (batch 1, p50)", speedup, ">=", goal.onnx_speedup_p50),
        row(f"serving p95 ms at {top or '?'} clients", p95, "<", goal.http_p95_ms),
        row(f"serving QPS at {top or '?'} clients", qps, ">=", goal.http_qps),
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
    """Latency and bytes/doc per synthetic corpus size, with the dense index chosen at each."""
    lines = ["", "## Cost as the corpus grows (synthetic corpora)", ""]
    if not growth or _skipped(growth):  # an older report, or a run without the section
        return lines + [f"skipped: {_skipped(growth) or 'not run'}"]
    rows = growth["rows"]
    modes, parts = list(rows[0]["modes"]), list(rows[0]["bytes_per_doc"])
    lines += [growth["method"], "", f"{growth['queries']} real queries; {growth['real_docs']} real documents sampled.",
              "", f"![growth]({growth['plot']})", ""]
    lines += _table(["docs", *[f"{m} p50 ms" for m in modes], "dense chosen"],
                    [[r["docs"], *[r["modes"][m]["p50_ms"] for m in modes], r["choice"]] for r in rows])
    lines += [""]
    lines += _table(["docs", *[f"{p} B/doc" for p in parts], *[f"{k} recall@10" for k in rows[0]["recall@10_vs_flat"]]],
                    [[r["docs"], *[r["bytes_per_doc"][p] for p in parts], *r["recall@10_vs_flat"].values()]
                     for r in rows])
    return lines


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
        lines += [f"mode {http['mode'] or 'the bundle default'}, k={http['k']}; server RSS taken right after each level",
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
        lines += _table(["clients", "requests", "p50 ms", "p95 ms", "p99 ms", "QPS", "failed", "server RSS MB", *extra], rows)
        if ref:
            lines += ["", f"The last two columns: the same server and load in mode {reference.get('mode')} "
                          "(the HTTP stack's ceiling on this machine)."]
    return "\n".join(lines) + "\n"


def write_results(result: dict, out_dir: Path) -> tuple[Path, Path]:
    """Write bench.json and bench.md atomically into `out_dir`."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return atomic_write_json(out_dir / JSON_FILE, result), atomic_write_text(out_dir / MD_FILE, render_markdown(result))
