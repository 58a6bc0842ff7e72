"""The feedback stage's held-out day, as the evaluate stage reads it (artifacts/feedback).

Paths and formats are those uniret.stages.feedback writes (its HELDOUT_QUERIES, COEC_QRELS,
CLICK_MODEL_QRELS, IPS_QRELS; a test holds the two in step): the day's distinct queries in BEIR's query format
and click-derived judgments as BEIR qrels TSV with real-valued scores. A bad line is an error naming
the file, the line and the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uniret.core.errors import DataError, DataProblem
from uniret.evaluation.graded import GradedQrels

HELDOUT_QUERIES = "heldout/queries.jsonl"
JUDGMENTS = {"click_model": "heldout/qrels/click_model.tsv", "coec": "heldout/qrels/coec.tsv",
             "ips": "heldout/qrels/ips.tsv"}
MANIFEST = "manifest.json"


@dataclass
class HeldoutDay:
    """The held-out day: its queries {key: text} and each judgment set {name: qrels}."""

    day: str | None
    queries: dict[str, str]
    judgments: dict[str, GradedQrels]


def read_queries(path: Path) -> dict[str, str]:
    """{_id: text} of a BEIR queries.jsonl."""
    out: dict[str, str] = {}
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(DataProblem(path, line_no, None, f"not JSON: {exc.msg}")) from exc
            for key in ("_id", "text"):
                if not isinstance(row, dict) or not isinstance(row.get(key), str) or not row[key]:
                    raise DataError(DataProblem(path, line_no, key, "expected a non-empty string"))
            if row["_id"] in out:
                raise DataError(DataProblem(path, line_no, "_id", f"duplicate query id {row['_id']!r}"))
            out[row["_id"]] = row["text"]
    return out


def read_graded_qrels(path: Path) -> GradedQrels:
    """{query: {doc: score}} of a qrels TSV (header `query-id corpus-id score`) with real-valued scores >= 0."""
    out: GradedQrels = {}
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            line = line.rstrip("\n")
            if line_no == 1 and line.startswith("query-id"):
                continue
            if not line.strip():
                continue
            parts = line.split("\t")
            if len(parts) != 3:
                raise DataError(DataProblem(path, line_no, None, f"expected 3 tab-separated fields, got {len(parts)}"))
            query, doc, raw = parts
            try:
                score = float(raw)
            except ValueError:
                score = math.nan
            if not math.isfinite(score) or score < 0:
                raise DataError(DataProblem(path, line_no, "score", f"expected a finite number >= 0, got {raw!r}"))
            if doc in out.setdefault(query, {}):
                raise DataError(DataProblem(path, line_no, "corpus-id", f"({query}, {doc}) judged twice"))
            out[query][doc] = score
    return out


def feedback_status(feedback_dir: Path) -> tuple[str | None, dict[str, Any]]:
    """(why there is no held-out day, or None; the feedback manifest's metrics)."""
    manifest = feedback_dir / MANIFEST
    if not manifest.is_file():
        return "no feedback stage output (artifacts/feedback has no manifest)", {}
    try:
        metrics = json.loads(manifest.read_text(encoding="utf-8")).get("metrics") or {}
    except (json.JSONDecodeError, AttributeError) as exc:
        raise DataError(DataProblem(manifest, None, "metrics", f"not a stage manifest: {exc}")) from exc
    status = str(metrics.get("status", ""))
    if status != "ok":
        return f"feedback stage {status or 'has no status'}", metrics
    if not (metrics.get("window") or {}).get("heldout"):
        return "the feedback window has no held-out day", metrics
    return None, metrics


def read_heldout(feedback_dir: Path) -> tuple[HeldoutDay | None, str]:
    """The held-out day under `feedback_dir`, or None and why (no logs, the stage skipped, no judged query)."""
    why, metrics = feedback_status(feedback_dir)
    if why:
        return None, why
    missing = [rel for rel in (HELDOUT_QUERIES, *JUDGMENTS.values()) if not (feedback_dir / rel).is_file()]
    if missing:
        raise DataError([DataProblem(feedback_dir / rel, None, None, "missing from the feedback stage's output")
                         for rel in missing])
    day = HeldoutDay(metrics["window"]["heldout"], read_queries(feedback_dir / HELDOUT_QUERIES),
                     {name: read_graded_qrels(feedback_dir / rel) for name, rel in JUDGMENTS.items()})
    for name, qrels in day.judgments.items():
        unknown = sorted(set(qrels) - set(day.queries))
        if unknown:
            raise DataError(DataProblem(feedback_dir / JUDGMENTS[name], None, "query-id",
                                        f"{len(unknown)} judged queries missing from {HELDOUT_QUERIES} "
                                        f"(e.g. {unknown[:3]})"))
    if not any(qrels for qrels in day.judgments.values()):
        return None, f"the held-out day {day.day} has no click-derived judgment"
    return day, ""
