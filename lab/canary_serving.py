"""E69, on the real server: what a canary costs serving (memory, p50 of an interleaved search against a
plain one, side by side in one run), and one canary end to end (`uniret simulate` -> `uniret canary decide`).

    python lab/canary_serving.py --production BUNDLE --candidate BUNDLE --data ../shared/data \
        --out results/canary

A temp registry gets the production bundle; `uniret serve --registry` serves it with UBI logging on.
  1. memory: the server's RSS (VmRSS) with production alone, then with the candidate loaded beside it;
  2. latency: the canary at share 0.5; `--requests` NFCorpus dev queries, one keep-alive client, in
     turn; each answer says whether it was interleaved (the X-Uniret-Canary header); p50 / p95 of each
     kind from the same run;
  3. end to end: the canary again at share 1.0, `uniret simulate` sends `--sessions` sessions of the dev
     queries (the same click model as the study), `uniret canary decide` applies the rule.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from uniret.bench.server import LOOPBACK, LocalServer
from uniret.config import load_params
from uniret.data.beir import BeirDataset, read_qrels
from uniret.registry import canary
from uniret.registry.promotion import promote

TOKEN = "lab-canary-token"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def post(conn: http.client.HTTPConnection, path: str, body: dict, token: bool = False) -> tuple[int, dict, bool]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {TOKEN}"} if token else {})}
    conn.request("POST", path, json.dumps(body), headers)
    resp = conn.getresponse()
    data = json.loads(resp.read() or b"{}")
    return resp.status, data, resp.getheader("X-Uniret-Canary") == "interleaved"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--production", required=True)
    ap.add_argument("--candidate", required=True)
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--sessions", type=int, default=9000)
    ap.add_argument("--out", default="results/canary")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="canary-serving-"))
    registry, logs = work / "registry", work / "logs"
    raw = yaml.safe_load(Path(args.params).read_text())
    raw["feedback"] = {**raw["feedback"], "log_dir": str(logs), "randpair_share": 0.0}
    raw["serve"] = {**raw["serve"], "watch_interval_s": 0.0, "workers": 1}
    raw["registry"] = {**raw["registry"], "root": str(registry), "dvc_push": False}
    raw["simulate"] = {**raw["simulate"], "split": "dev"}
    params_path = work / "params.yaml"
    params_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    cfg = load_params(params_path, None).section("canary")
    promote(registry, args.production, evaluation=None, decision=None, lineage={}, version="production",
            dvc_push=False)
    texts = BeirDataset(Path(args.data) / "nfcorpus").queries()
    dev = sorted(q for q in read_qrels(Path(args.data) / "nfcorpus" / "qrels" / "dev.tsv") if q in texts)
    env = {"UNIRET_ADMIN_TOKEN": TOKEN, "UNIRET_DATA": str(Path(args.data).resolve())}
    out: dict = {"production": Path(args.production).name, "candidate": Path(args.candidate).name,
                 "machine": subprocess.run(["lscpu"], capture_output=True, text=True).stdout.split("Model name:")[1]
                 .splitlines()[0].strip()}
    with LocalServer(["--registry", str(registry)], params_path, None, env=env, log_dir=work) as server:
        server.start(600)
        conn = http.client.HTTPConnection(LOOPBACK, server.port, timeout=60)
        for q in dev[:50]:  # warm up production alone
            post(conn, "/search", {"query": texts[q]})
        out["rss_mb_production"] = round(rss_mb(server.proc.pid), 1)
        import dataclasses

        canary.start(registry, args.candidate, dataclasses.replace(cfg, share=0.5), evaluation=None, decision=None,
                     lineage={"lab": "canary_serving"})
        status, reply, _ = post(conn, "/admin/canary", {}, token=True)
        assert status == 200, reply
        for q in dev[:50]:
            post(conn, "/search", {"query": texts[q]})
        out["rss_mb_with_candidate"] = round(rss_mb(server.proc.pid), 1)
        took: dict[bool, list[float]] = {True: [], False: []}
        for i in range(args.requests):
            q = dev[i % len(dev)]
            t = time.perf_counter()
            status, _, interleaved = post(conn, "/search", {"query": texts[q]})
            took[interleaved].append((time.perf_counter() - t) * 1000)
            assert status == 200
        out["latency_ms"] = {("interleaved" if k else "plain"): {
            "requests": len(v), "p50": round(float(np.percentile(v, 50)), 3),
            "p95": round(float(np.percentile(v, 95)), 3)} for k, v in took.items()}
        out["p50_ratio"] = round(out["latency_ms"]["interleaved"]["p50"] / out["latency_ms"]["plain"]["p50"], 3)
        canary.finish(registry, "abandon", "latency measured; the end-to-end canary follows at share 1.0")
        canary.start(registry, args.candidate, dataclasses.replace(cfg, share=1.0), evaluation=None, decision=None,
                     lineage={"lab": "canary_serving"})
        post(conn, "/admin/canary", {}, token=True)
        conn.close()
        t = time.time()
        sim = subprocess.run([sys.executable, "-m", "uniret", "simulate", "--url", server.base_url, "--params",
                              str(params_path), "--data", args.data, "--sessions", str(args.sessions),
                              "--out", str(work / "simulate.json")], capture_output=True, text=True,
                             env={**os.environ, **env})
        assert sim.returncode == 0, sim.stderr[-2000:]
        out["simulate_seconds"] = round(time.time() - t, 1)
        time.sleep(2)  # the writer's last batch
        decide = subprocess.run([sys.executable, "-m", "uniret", "canary", "decide", "--params", str(params_path),
                                 "--serve-url", server.base_url, "--out", str(work / "decision")],
                                capture_output=True, text=True, env={**os.environ, **env})
        out["end_to_end"] = {"sessions": args.sessions, "share": 1.0, "split": "dev", "exit_code": decide.returncode,
                             "decision": json.loads(decide.stdout) if decide.stdout.strip().startswith("{")
                             else decide.stdout + decide.stderr[-2000:]}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "serving.json").write_text(json.dumps(out, indent=2))
    print(json.dumps({k: v for k, v in out.items() if k != "end_to_end"}, indent=2))
    print(json.dumps(out["end_to_end"], indent=2)[:3000])


if __name__ == "__main__":
    main()
