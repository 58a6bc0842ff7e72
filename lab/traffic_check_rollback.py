"""E96, the other direction: a candidate that is really worse. Night 0's bundle of a loop arm is put
against each night's production on that night's held-out day, as the gate's newest-traffic check would
see a rollback to it: candidate - production on the truth (the traffic's train qrels) and on each check
metric (full list, condensed list) of the day's judgments (the gate's, and under by_judgments every set
the night kept), under the gate's paired rule.

    python lab/traffic_check_rollback.py WORKSPACE [--data ../shared/data] [--out lab/results/...json]

WORKSPACE: a finished `uniret loop run` arm (its nights/<n>/ keep the held-out day and production's run).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from uniret.config import load_params
from uniret.core.runs import read_run
from uniret.data.beir import BeirDataset, read_qrels
from uniret.evaluation import newest_traffic as traffic
from uniret.evaluation.heldout import JUDGMENTS, HeldoutDay, read_graded_qrels
from uniret.loop import traffic_truth
from uniret.runtime import make_context
from uniret.utils.files import atomic_write_json

REPO = Path(__file__).resolve().parents[1]


def rollback_rows(work: Path, data: Path) -> list[dict]:
    """One row per night n >= 2: night 0's bundle against night n's production on day n."""
    loop = json.loads((work / "loop.json").read_text())
    gate = load_params(REPO / "params.yaml", None).section("gate")
    dataset = BeirDataset(data / loop["dataset"])
    qrels, texts = read_qrels(dataset.qrels_path("train")), dataset.queries()
    ctx = make_context(work / "params.yaml", loop["profile"], str(data), work / "artifacts")
    night0 = work / "registry" / "bundles" / loop["nights"][0]["version"]
    rows = []
    for night in loop["nights"][2:]:
        keep = work / "nights" / str(night["night"])
        queries = traffic_truth.read_day(keep)
        judged = {name: read_graded_qrels(path) for name, rel in JUDGMENTS.items()
                  if (path := keep / traffic_truth.HELDOUT / Path(rel).relative_to("heldout")).is_file()}
        runs = {traffic.PRODUCTION_SYSTEM: read_run(keep / traffic_truth.NEWEST / traffic.RUNS_DIR
                                                    / f"{traffic.PRODUCTION_SYSTEM}.trec"),
                traffic_truth.CANDIDATE: traffic.bundle_run(ctx, night0, "hybrid_fast", queries)}
        scored = {side: traffic.score_run(HeldoutDay(night["day"], queries, judged), run) for side, run in runs.items()}
        checked = {name: {side: scored[side][name] for side in runs} for name in judged}
        day = traffic_truth.compare_day(runs, checked, traffic_truth.truth_qrels(queries, qrels, texts), gate)
        if day is None:
            print(f"night {night['night']}: the day's {gate.newest_traffic.judgments} judgments judged no query",
                  flush=True)
            continue
        row = {"night": night["night"], "production": night["version"], **day}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("work", type=Path)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=REPO / "lab" / "results" / "traffic_check_rollback.json")
    args = ap.parse_args(argv)
    rows = rollback_rows(args.work, args.data)
    atomic_write_json(args.out, {"question": "E96: does the newest-traffic check block a candidate that is really worse?",
                                 "command": " ".join(["python", *sys.argv]),
                                 "candidate": "night 0's bundle (hybrid_fast)", "rows": rows,
                                 "agreement": traffic_truth.agreement(rows),
                                 "by_judgments": traffic_truth.agreements(rows)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
