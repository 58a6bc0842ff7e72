"""The N-night learning loop in simulation: a day of traffic on the real server, the nightly, promotion, the next day.

One arm runs in its own workspace (params, artifacts, registry, logs). Night 0 indexes the traffic
domain's corpus with the starting checkpoint and promotes it. Each night n then:
  1. starts `uniret serve` on the registry's production bundle with UBI logging on (a fresh process:
     the reload), sends `sessions` simulated users (uniret.simulation.driver), stops it;
  2. dates that day's spans to simulated day n (every timestamp shifted by one delta, so the
     nightly sees closed days one apart; the traffic itself is untouched);
  3. runs the nightly's stages through the same stage functions as `dvc repro` (feedback, index,
     evaluate) and promotes the new bundle.
The light profile (issue 56's "cost" clause): the transformer is not retrained; what learns is the
query side of the served mode (the static tower fine-tuned on the clicks, distilled on the logged
query texts) and its fusion weights; the corpus encodings of the checkpoint are cached across nights.
The fusion weights are learned on the traffic domain's dev split, the loop's only dev set: the other
corpora keep the weights production serves them with (index.fusion.zero_shot_weights, E77).
With `retrain_steps` (click arms), a night with training clicks also runs the continual stage first:
`retrain_steps` steps on the arm's clicks alone (training.continual.clicks, labels off), warm-started
from the checkpoint production was built from; the index stage then encodes the corpora again.
The gate is not run: the loop measures learning (each night's candidate is promoted).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from uniret.config.loader import merge_overrides
from uniret.core.errors import ConfigError
from uniret.registry.checkpoints import PRODUCTION
from uniret.ubi import EVENTS, QUERIES

log = logging.getLogger("uniret.loop")

# what each arm trains the served mode's query side on (params index.static_query)
ARMS: dict[str, dict[str, Any]] = {
    "debiased": {"train_labels": False, "train_queries": False, "clicks": "ips"},
    "naive": {"train_labels": False, "train_queries": False, "clicks": "naive"},
    # the domain's true train labels, no traffic: what the clicks are measured against
    "skyline": {"train_labels": True, "train_queries": True, "clicks": "none"},
}
NIGHT_STAGES = ("feedback", "index", "evaluate")
FIRST_STAGES = ("validate", "bm25")


@dataclass
class LoopConfig:
    """One arm of the loop."""

    arm: str
    nights: int
    sessions: int
    work: Path
    checkpoint: Path  # the starting model (the promoted default bundle's checkpoint)
    data_root: Path
    params: Path  # the project's params.yaml
    dataset: str = "nfcorpus"
    randpair_share: float = 0.1
    seed: int = 7
    cache: Path | None = None  # a corpus-encoding cache to start from (the demo's artifacts/cache)
    extra: dict[str, Any] = field(default_factory=dict)  # further params overrides (tests: the tiny profile)
    profile: str = "cpu"
    until: int | None = None  # stop after this night (arms run night by night, interleaved; days keep their dates)
    retrain_steps: int = 0  # > 0: nights with training clicks retrain the transformer on them first (click arms)
    # > 0: from day 2, that share of searches interleaves production with the previous production bundle (a canary):
    # team-draft's coin flips move documents between ranks on the same day, independently of that day's clicks
    canary_share: float = 0.0


def _day(n: int, nights: int) -> str:
    """Simulated day n: the last night's day is yesterday (UTC), so every span is closed and inside retention."""
    today = datetime.now(UTC).date()
    return (today - timedelta(days=nights - n + 1)).isoformat()


def write_params(cfg: LoopConfig) -> Path:
    """The arm's params file: the project's, with the loop's and the arm's settings over it."""
    raw = yaml.safe_load(cfg.params.read_text(encoding="utf-8"))
    static = ARMS[cfg.arm]
    overrides = {
        "profile": cfg.profile,
        "data": {"root": str(cfg.data_root), "train_dataset": cfg.dataset,
                 # no carve of the traffic domain's train labels: only the skyline may read them
                 "dev": {"fraction": 0.0}},
        "feedback": {"log_dir": str(cfg.work / "logs"), "randpair_share": cfg.randpair_share, "randpair_seed": cfg.seed},
        "canary": {"seed": cfg.seed},  # the interleaving draws replay too
        "index": {"static_query": static},
        "registry": {"root": str(cfg.work / "registry"), "dvc_push": False, "serve_url": None},
        "serve": {"watch_interval_s": 0.0, "workers": 1},
        "simulate": {"dataset": cfg.dataset, "split": "train", "sessions": cfg.sessions},
        # the expected-score references are the default recipe's on its own train set, not a loop's
        "evaluate": {"expected_scores": []},
    }
    if cfg.retrain_steps:
        overrides["training"] = {"continual": {"start_model": PRODUCTION,  # the registry's, as a nightly's
                                               "clicks": {"source": static["clicks"], "labels": False}}}
        _write_recipes(cfg, raw)
    merged = merge_overrides(merge_overrides(raw, overrides), cfg.extra)
    path = cfg.work / "params.yaml"
    path.write_text(yaml.safe_dump(merged, sort_keys=False), encoding="utf-8")
    return path


def _write_recipes(cfg: LoopConfig, raw: dict[str, Any]) -> None:
    """<work>/recipes/: the project's recipe files (read beside the arm's params), the active recipe's
    continual stage cut to `retrain_steps` steps under the loop's profile."""
    from uniret.config.recipe_files import RECIPES_DIR, recipes_dir

    target = cfg.work / RECIPES_DIR
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(recipes_dir(cfg.params), target)
    recipe = target / f"{raw['model']['recipe']}.yaml"
    doc = yaml.safe_load(recipe.read_text(encoding="utf-8"))
    cut = {"profiles": {cfg.profile: {"train": {"continual": {"max_steps": cfg.retrain_steps}}}}}
    recipe.write_text(yaml.safe_dump(merge_overrides(doc, cut), sort_keys=False), encoding="utf-8")


def seed_checkpoint(cfg: LoopConfig) -> None:
    """artifacts/continual/model := the starting checkpoint (what a continual stage would leave),
    with a manifest saying where it came from; the index stage's `auto` source then finds it."""
    from uniret.runtime import MANIFEST
    from uniret.utils.files import atomic_write_json, hash_path

    stage = cfg.work / "artifacts" / "continual"
    if (stage / MANIFEST).is_file():
        return
    src_manifest = cfg.checkpoint.parent / MANIFEST
    recipe = json.loads(src_manifest.read_text())["recipe"] if src_manifest.is_file() else "hybrid"
    stage.mkdir(parents=True, exist_ok=True)
    shutil.copytree(cfg.checkpoint, stage / "model")
    atomic_write_json(stage / MANIFEST, {"written_by": "uniret", "stage": "continual", "recipe": recipe,
                                         "skipped": False, "seeded_from": str(cfg.checkpoint),
                                         "checkpoint_sha256": hash_path(stage / "model")})
    if cfg.cache is not None and cfg.cache.is_dir() and not (cfg.work / "artifacts" / "cache").exists():
        shutil.copytree(cfg.cache, cfg.work / "artifacts" / "cache")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(port: int, proc: subprocess.Popen, timeout_s: float = 300.0) -> None:
    import http.client

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"uniret serve exited with {proc.returncode} before it was ready")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"uniret serve not ready after {timeout_s:.0f} s")


def _wait_canary(port: int, token: str, timeout_s: float = 300.0) -> str:
    """POST /admin/canary (the promote/canary commands' notify), which returns once the server's own
    start-up sync of canary.json has loaded the candidate (one sync at a time): a one-worker server is
    ready on production alone while a running canary's candidate still loads, and a day's first
    searches would not be interleaved. The server's reply."""
    from uniret.registry.notify import notify_canary

    result = notify_canary(f"http://127.0.0.1:{port}", token, timeout_s)
    if result.status != "ok" or "interleaved" not in result.detail:
        raise RuntimeError(f"uniret serve does not interleave the loop's canary: {result.detail}")
    return result.detail


def serve_day(cfg: LoopConfig, params: Path, night: int) -> dict[str, Any]:
    """Start the server on production (and the running canary's candidate, if any), send the day's simulated
    users, stop it (its log queue is written out)."""
    import secrets

    from uniret.config import load_params
    from uniret.registry.canary import running
    from uniret.simulation.driver import simulate

    loaded = load_params(params, cfg.profile)
    port = _free_port()
    log_file = (cfg.work / "logs" / f"serve-night{night}.log").open("w")
    cmd = [sys.executable, "-m", "uniret", "serve", "--params", str(params), "--profile", cfg.profile,
           "--port", str(port), "--registry", str(cfg.work / "registry")]
    token = secrets.token_hex(16)  # this server's admin token, for the canary check alone
    env = {**os.environ, "UNIRET_DATA": str(cfg.data_root),
           loaded.section("registry").token_env: token}
    proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_ready(port, proc)
        canary = _wait_canary(port, token) if running(cfg.work / "registry") is not None else None
        import dataclasses

        scfg = dataclasses.replace(loaded.section("simulate"), seed=cfg.seed * 1000 + night)
        return {**simulate("127.0.0.1", port, cfg.data_root / cfg.dataset, scfg), "canary": canary}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log_file.close()


def _shift(stamp: str, delta: timedelta) -> str:
    t = datetime.fromisoformat(stamp.replace("Z", "+00:00")) + delta
    return t.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def date_spans(log_dir: Path, day: str, started: datetime) -> int:
    """Move every span written since the loop's last dating to simulated `day`, each timestamp shifted
    by (day's midnight - `started`); returns the records moved. Spans already dated stay."""
    delta = datetime.fromisoformat(day).replace(tzinfo=UTC) - started
    moved = 0
    for kind in (QUERIES, EVENTS):
        root = log_dir / kind
        target = root / day
        for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
            if (folder / ".dated").exists() or folder.name == day:
                continue
            target.mkdir(parents=True, exist_ok=True)
            for f in sorted(folder.glob("*.jsonl")):
                lines = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
                for rec in lines:
                    rec["timestamp"] = _shift(rec["timestamp"], delta)
                out = target / f"{folder.name}-{f.name}"
                out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines), encoding="utf-8")
                moved += len(lines)
            shutil.rmtree(folder)
        if target.is_dir():
            (target / ".dated").touch()
    return moved


def _promote(cfg: LoopConfig, night: int, metrics: dict[str, Any]) -> str:
    """Publish the night's bundle with its checkpoint (the next retraining night starts from it) and
    make it production; its version."""
    from uniret.registry.promotion import promote
    from uniret.stages.promote import candidate_checkpoint

    bundle = cfg.work / "artifacts" / "index" / "bundle"
    checkpoint = candidate_checkpoint(lambda stage: cfg.work / "artifacts" / stage, bundle)
    result = promote(cfg.work / "registry", bundle, evaluation=metrics, decision=None,
                     lineage={"loop": {"arm": cfg.arm, "night": night}}, dvc_push=False, attachments=checkpoint)
    return result.version


def keep_per_query(evaluate: Path, keep: Path, dataset: str, mode: str = "hybrid_fast") -> None:
    """A night's per-query scores of the served mode: the domain's as per_query.json, every set's under
    per_query/ (the report's zero-shot check pairs them across nights)."""
    folder = evaluate / "per_query" / mode
    for f in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        (keep / "per_query").mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, keep / "per_query" / f.name)
        if f.stem == dataset:
            shutil.copy2(f, keep / "per_query.json")


def keep_newest_traffic(art: Path, keep: Path) -> None:
    """The held-out day's queries and judgments and both sides' scores and runs on it (the report holds the
    gate's newest-traffic check against the simulator's truth: uniret.loop.traffic_truth)."""
    from uniret.loop.traffic_truth import HELDOUT, NEWEST

    for src, name in ((art / "evaluate" / NEWEST, NEWEST), (art / "feedback" / HELDOUT, HELDOUT)):
        shutil.rmtree(keep / name, ignore_errors=True)
        if src.is_dir():
            shutil.copytree(src, keep / name)


def _night_figures(cfg: LoopConfig, night: int) -> dict[str, Any]:
    """The night's evaluation (served mode and BM25 on the domain's test split, the zero-shot macro),
    its per-query scores kept for the paired intervals, and what the feedback stage derived."""
    from uniret.runtime import read_manifest

    art = cfg.work / "artifacts"
    doc = json.loads((art / "evaluate" / "metrics.json").read_text())
    keep = cfg.work / "nights" / str(night)
    keep.mkdir(parents=True, exist_ok=True)
    shutil.copy2(art / "evaluate" / "metrics.json", keep / "metrics.json")
    keep_per_query(art / "evaluate", keep, cfg.dataset)
    keep_newest_traffic(art, keep)
    fb = read_manifest(art / "feedback").get("metrics", {}) if (art / "feedback").is_dir() else {}
    static = (read_manifest(art / "index").get("metrics") or {}).get("static_query") or {}
    return {
        "night": night,
        "ndcg@10": doc["datasets"][cfg.dataset]["hybrid_fast"]["ndcg@10"],
        "bm25_ndcg@10": doc["datasets"][cfg.dataset]["bm25"]["ndcg@10"],
        "zero_shot_macro": (doc.get("zero_shot_macro") or {}).get("hybrid_fast", {}).get("ndcg@10"),
        "newest_traffic": doc.get("newest_traffic"),
        "feedback": {k: fb.get(k) for k in ("status", "window", "train_sessions", "ips_pairs", "naive_pairs",
                                            "propensities", "rankers")},
        "clicks_used": static.get("clicks"), "finetune_queries": static.get("finetune_queries"),
    }


def run_loop(cfg: LoopConfig) -> dict[str, Any]:
    """Run night 0 and `cfg.nights` nights of one arm; returns (and writes to <work>/loop.json) the figures."""
    from uniret.runtime import make_context
    from uniret.stages import run_stage

    if cfg.arm not in ARMS:
        raise ValueError(f"arm must be one of {sorted(ARMS)}, got {cfg.arm!r}")
    if cfg.retrain_steps and ARMS[cfg.arm]["clicks"] == "none":
        raise ConfigError(f"retrain_steps: the {cfg.arm} arm has no clicks to retrain the transformer on")
    cfg.work.mkdir(parents=True, exist_ok=True)
    (cfg.work / "logs").mkdir(exist_ok=True)
    params = write_params(cfg)
    seed_checkpoint(cfg)
    out_path = cfg.work / "loop.json"
    summary: dict[str, Any] = json.loads(out_path.read_text()) if out_path.is_file() else {}
    summary.update(arm=cfg.arm, settings=ARMS[cfg.arm], retrain_steps=cfg.retrain_steps,
                   canary_share=cfg.canary_share, profile=cfg.profile,
                   dataset=cfg.dataset,
                   sessions_per_night=cfg.sessions, randpair_share=cfg.randpair_share, checkpoint=str(cfg.checkpoint),
                   gate="not run: every night's candidate is promoted (the loop measures learning)")
    nights = summary.setdefault("nights", [])
    done = {n["night"] for n in nights}
    traffic = cfg.arm != "skyline"
    last = cfg.nights if traffic else 1
    if cfg.until is not None:
        last = min(last, cfg.until)
    for night in range(0, last + 1):
        if night in done:
            continue
        start = time.perf_counter()
        day = None
        sim = None
        if night == 0:
            stages = (*FIRST_STAGES, *NIGHT_STAGES)
            # night 0 learns from nothing: the starting model on the domain's corpus (no labels, no logs)
            night_ctx = make_context(_night0_params(cfg, params), cfg.profile, str(cfg.data_root), cfg.work / "artifacts")
        else:
            params = carry_zero_shot_weights(params, cfg.work / "registry" / "bundles" / nights[-1]["version"])
            stages = NIGHT_STAGES
            night_ctx = make_context(params, cfg.profile, str(cfg.data_root), cfg.work / "artifacts")
            if traffic:
                began = datetime.now(UTC)
                sim = serve_day(cfg, params, night)
                day = _day(night, cfg.nights)
                sim["records_dated"] = date_spans(cfg.work / "logs", day, began)
        timings = {}
        for stage in stages:
            t = time.perf_counter()
            log.info("loop %s night %d: stage %s", cfg.arm, night, stage)
            run_stage(stage, night_ctx)
            timings[stage] = round(time.perf_counter() - t, 1)
            if stage == "feedback" and night > 0 and cfg.retrain_steps and _training_sessions(cfg):
                t = time.perf_counter()
                retrain(cfg, night_ctx)
                timings["continual"] = round(time.perf_counter() - t, 1)
        figures = _night_figures(cfg, night)
        if "continual" in timings:
            from uniret.runtime import read_manifest

            figures["retrained"] = (read_manifest(cfg.work / "artifacts" / "continual").get("metrics") or {}).get("clicks")
        figures.update(day=day, version=_promote(cfg, night, figures), stage_seconds=timings,
                       wall_seconds=round(time.perf_counter() - start, 1), simulation=sim)
        if cfg.canary_share > 0 and night > 0 and traffic and night < last:
            figures["canary"] = interleave_with_previous(cfg, nights[-1]["version"])
        nights.append(figures)
        tmp = out_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(summary, indent=2))
        tmp.replace(out_path)
        log.info("loop %s night %d: nDCG@10 %.4f (%.0f s)", cfg.arm, night, figures["ndcg@10"],
                 figures["wall_seconds"])
    return summary


def carry_zero_shot_weights(params: Path, production: Path) -> Path:
    """The arm's params with index.fusion.zero_shot_weights := the weights the `production` bundle serves
    the other corpora with: the loop has no dev set away from its traffic domain to learn them on (E77)."""
    from uniret.retrieval.bundle import fusion_weights_of, read_bundle_manifest

    weights = fusion_weights_of(read_bundle_manifest(production), other_corpus=True)
    raw = yaml.safe_load(params.read_text(encoding="utf-8"))
    raw["index"].setdefault("fusion", {})["zero_shot_weights"] = weights
    tmp = params.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    tmp.replace(params)
    return params


def interleave_with_previous(cfg: LoopConfig, previous: str) -> dict[str, Any]:
    """Start a canary of the previous production bundle against the one just promoted, so the next day's
    searches are interleaved on `canary_share` of them (the canary before it is stopped first). The loop
    never decides it: it is there for the interventions, not for the promotion."""
    from uniret.config.canary import CanaryConfig
    from uniret.registry.canary import finish, running, start

    root = cfg.work / "registry"
    if running(root) is not None:
        finish(root, "abandon", "loop: the next night's canary replaces it")
    state = start(root, root / "bundles" / previous, CanaryConfig(share=cfg.canary_share), evaluation=None,
                  decision=None, lineage={"loop": {"arm": cfg.arm, "interleaved_with_previous": True}})
    return {"candidate": state["candidate"], "production": state["production"], "share": state["share"]}


def _training_sessions(cfg: LoopConfig) -> int:
    from uniret.runtime import read_manifest

    return int((read_manifest(cfg.work / "artifacts" / "feedback").get("metrics") or {}).get("train_sessions") or 0)


def retrain(cfg: LoopConfig, ctx) -> None:
    """The continual stage on the night's clicks, warm-started from production's checkpoint (`start_model:
    production`: the one published with the loop registry's production bundle)."""
    from uniret.stages import run_stage

    run_stage("continual", ctx)


def _night0_params(cfg: LoopConfig, params: Path) -> Path:
    """Night 0's params: the arm's, with nothing learned from the domain (no labels, no clicks)."""
    raw = yaml.safe_load(params.read_text(encoding="utf-8"))
    night0 = merge_overrides(raw, {"index": {"static_query": ARMS["debiased"] | {"clicks": "none"}}})
    path = cfg.work / "params.night0.yaml"
    path.write_text(yaml.safe_dump(night0, sort_keys=False), encoding="utf-8")
    return path
