"""Candidates for the gate's error-rate study (`uniret gate-study`, E50): real retrains and real damage.

Each candidate runs in its own folder under --work, next to the DAG that `make demo` left in
artifacts/: a copy of params.yaml and recipes/ with the candidate's overrides, and an artifacts folder
whose upstream stages are links to the demo's (validate, bm25, warmup, mine: every retrain continues
from the same warm-up checkpoint and mined negatives). Then the real stage commands:

    retrain NAME    continual -> index -> evaluate, with --set params / --recipe-set recipe overrides
                    (e.g. other seeds: an equal candidate; half the steps: a worse one) and, with
                    --shuffle-positives F, a fraction F of the mined groups' positives replaced by
                    random corpus documents (train qrels shuffled, as the continual stage reads them)
    reindex NAME    index -> evaluate on another candidate's (or the demo's) continual checkpoint, with
                    --set overrides of the index stage (e.g. a degraded head index, unlearned weights)
    reevaluate NAME evaluate only, on another candidate's (or the demo's) continual + index outputs,
                    with --set overrides read at evaluation time (e.g. a stale IDF table)

and `uniret gate-study add NAME` of its served mode's per-query scores into --root. Only the
evaluated systems the gate reads are scored (`evaluate.profiles.cpu.sources: [bundle]`, the served
mode's routes), so a candidate costs its training, its index stage and one pass over the five test
sets. The command of every candidate of the committed study is in docs/experiments.md (E50).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

UPSTREAM = ("validate", "bm25", "warmup", "mine")
# the served mode and the routes it fuses: all the gate reads (the index stage learns hybrid_fast's
# weights alone when the other fusion modes are not listed; each mode's weights are learned apart)
STUDY_MODES = ["bm25", "lexical_static", "dense_static", "dense_feedback", "hybrid_fast"]


def set_dotted(doc: dict, key: str, value) -> None:
    """doc[a][b][c] = value for key 'a.b.c', creating the mappings on the way."""
    *path, last = key.split(".")
    for part in path:
        doc = doc.setdefault(part, {})
        if not isinstance(doc, dict):
            raise SystemExit(f"--set {key}: {part!r} is not a mapping")
    doc[last] = value


def parse_sets(items: list[str]) -> list[tuple[str, object]]:
    """'a.b=VALUE' pairs, VALUE read as YAML (numbers, lists, booleans)."""
    out = []
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--set {item!r}: expected KEY=VALUE")
        out.append((key, yaml.safe_load(raw)))
    return out


def write_config(folder: Path, params: Path, sets: list[str], recipe_sets: list[str]) -> Path:
    """params.yaml and recipes/ copied into `folder` with the overrides; returns the params copy."""
    doc = yaml.safe_load(params.read_text())
    # candidates are not held to the expected-score files (their paths are relative to the project)
    for key, value in [("retrieval.modes", STUDY_MODES), ("evaluate.profiles.cpu.sources", ["bundle"]),
                       ("evaluate.expected_scores", []), *parse_sets(sets)]:
        set_dotted(doc, key, value)
    recipes = folder / "recipes"
    if recipes.exists():
        shutil.rmtree(recipes)
    shutil.copytree(params.parent / "recipes", recipes)
    recipe_file = recipes / f"{doc['model']['recipe']}.yaml"
    recipe = yaml.safe_load(recipe_file.read_text())
    for key, value in parse_sets(recipe_sets):
        set_dotted(recipe, key, value)
    recipe_file.write_text(yaml.safe_dump(recipe, sort_keys=False))
    out = folder / "params.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def shuffle_positives(source: Path, target: Path, fraction: float, seed: int) -> int:
    """The mine stage's output copied with `fraction` of its groups' positives replaced by random
    documents of the groups' own pools (positives and negatives of every group); returns how many."""
    shutil.copytree(source, target, symlinks=False)
    groups = target / "negatives.jsonl"
    rows = [json.loads(line) for line in groups.read_text().splitlines() if line.strip()]
    pool = sorted({d for r in rows for d in (*r["positives"], *r["negatives"])})
    rng = random.Random(seed)
    chosen = rng.sample(range(len(rows)), round(fraction * len(rows)))
    for i in chosen:
        own = set(rows[i]["positives"])
        others = []
        while len(others) < len(own):
            pick = rng.choice(pool)
            if pick not in own and pick not in others:
                others.append(pick)
        rows[i]["positives"] = others
        rows[i]["negatives"] = [d for d in rows[i]["negatives"] if d not in rows[i]["positives"]]
    groups.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return len(chosen)


def run_stage(stage: str, params: Path, artifacts: Path, data: str, log: Path) -> float:
    """`uniret <stage>` on the candidate's folders; seconds it took (exits on failure, log kept)."""
    cmd = [str(Path(sys.executable).with_name("uniret")), stage, "--params", str(params), "--profile", "cpu",
           "--data", data, "--artifacts", str(artifacts)]
    start = time.monotonic()
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "UNIRET_PROFILE": "cpu"})
    if rc != 0:
        raise SystemExit(f"{stage} failed (exit {rc}); see {log}")
    return round(time.monotonic() - start, 1)


def link_upstream(artifacts: Path, base: Path, stages: tuple[str, ...]) -> None:
    artifacts.mkdir(parents=True, exist_ok=True)
    for stage in stages:
        link = artifacts / stage
        if not link.exists():
            link.symlink_to((base / stage).resolve(), target_is_directory=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("verb", choices=["retrain", "reindex", "reevaluate"])
    p.add_argument("name")
    p.add_argument("--kind", required=True, choices=["equal", "worse", "better"])
    p.add_argument("--what", required=True, help="how the candidate was made, in words")
    p.add_argument("--set", dest="sets", action="append", default=[], help="params override KEY=VALUE (YAML value)")
    p.add_argument("--recipe-set", dest="recipe_sets", action="append", default=[],
                   help="override of the active recipe file, KEY=VALUE")
    p.add_argument("--shuffle-positives", type=float, default=0.0, help="retrain: fraction of mined groups whose "
                   "positives are replaced by random documents")
    p.add_argument("--base", default="artifacts", help="the DAG whose upstream stages (and, for reevaluate, "
                   "continual checkpoint, and index outputs) the candidate reads (default: artifacts)")
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--data", default=str(Path("../shared/data").resolve()))
    p.add_argument("--work", default=".cache/gate-study", help="candidate folders (default: .cache/gate-study)")
    p.add_argument("--root", default="results/gate", help="the study folder (default: results/gate)")
    p.add_argument("--resume", action="store_true", help="keep the candidate's folder and the stage outputs it has")
    args = p.parse_args(argv)

    from uniret.ops.gate_study import add_candidate

    folder = Path(args.work) / args.name
    if folder.exists() and not args.resume:
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    base = Path(args.base)
    params = write_config(folder, Path(args.params), args.sets, args.recipe_sets)
    artifacts, log = folder / "artifacts", folder / "stages.log"
    seconds = {}
    if args.verb == "retrain":
        link_upstream(artifacts, base, tuple(s for s in UPSTREAM if not (s == "mine" and args.shuffle_positives)))
        if args.shuffle_positives and not (artifacts / "mine").exists():
            n = shuffle_positives(base / "mine", artifacts / "mine", args.shuffle_positives, seed=11)
            print(f"{args.name}: positives of {n} mined groups replaced")
        for stage in ("continual", "index"):
            if not (args.resume and (artifacts / stage / "manifest.json").is_file()):
                seconds[stage] = run_stage(stage, params, artifacts, args.data, log)
    elif args.verb == "reindex":
        link_upstream(artifacts, base, (*UPSTREAM, "reranker", "continual", "distill"))
        seconds["index"] = run_stage("index", params, artifacts, args.data, log)
    else:
        link_upstream(artifacts, base, (*UPSTREAM, "reranker", "continual", "distill", "index"))
    seconds["evaluate"] = run_stage("evaluate", params, artifacts, args.data, log)
    entry = add_candidate(Path(args.root), args.name, args.kind, args.what, artifacts / "evaluate", "hybrid_fast",
                          "ndcg@10")
    summary = json.loads((artifacts / "evaluate" / "metrics.json").read_text())
    means = {d: round(v["hybrid_fast"]["ndcg@10"], 4) for d, v in summary["datasets"].items() if "hybrid_fast" in v}
    print(json.dumps({"name": args.name, **entry, "seconds": seconds, "ndcg@10": means}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
