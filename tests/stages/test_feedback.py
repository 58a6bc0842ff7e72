"""The feedback stage on synthetic UBI spans over a real BEIR slice (NFCorpus: real doc ids and query texts).

Clicks follow a position-based click model with known examination propensities on randomly
ordered results, so the stage's estimate can be checked against them. The spans are written in
the log contract's layout (<log_dir>/ubi_queries|ubi_events/<day>/<writer>.jsonl).
"""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from uniret.config import Params
from uniret.config.sections import SliceConfig
from uniret.core.errors import StageFailed
from uniret.data.beir import BeirDataset, iter_corpus, read_qrels
from uniret.data.slicing import write_slice
from uniret.runtime import MANIFEST, VALIDATED_DATA, StageContext, make_context, read_manifest
from uniret.stages import feedback
from uniret.utils.files import atomic_write_json

THETA = [0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06]  # ULTRA's examination at ranks 1-10
DEPTH = len(THETA)
TODAY = datetime.now(UTC).date()


def _day(offset: int) -> str:
    return (TODAY - timedelta(days=offset)).isoformat()


def _stamp(day: str, second: int) -> str:
    return f"{day}T{second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"


def _event(action: str, query_id: str, client: str, day: str, second: int, doc: str, ordinal: int) -> dict:
    return {"application": "uniret", "action_name": action, "query_id": query_id, "client_id": client,
            "session_id": f"s-{query_id}", "timestamp": _stamp(day, second),
            "event_attributes": {"object": {"object_id": doc, "object_id_field": "doc_id"},
                                 "position": {"ordinal": ordinal}}}


def write_span(log_dir: Path, day: str, sessions: int, docs: list[str], queries: list[tuple[str, set[str]]],
               seed: int, writer: str = "host-1-1") -> tuple[list[str], list[str]]:
    """One day of sessions (query record + impressions + PBM clicks) as JSON lines in `writer`'s file;
    returns (query lines, event lines)."""
    rng = random.Random(seed)
    qlines, elines = [], []
    for n in range(sessions):
        text, relevant = queries[rng.randrange(len(queries))]
        pool = sorted(relevant)[:3] + random.Random(text).sample(docs, DEPTH)  # the same candidates per query
        hits = list(dict.fromkeys(pool))[:DEPTH]
        rng.shuffle(hits)  # in random orders: examination and relevance are not confounded
        qid = f"{day}-q{n}" if writer == "host-1-1" else f"{day}-{writer}-q{n}"
        client, second = f"client-{day}-{n % 17}", 60 + n * 7
        qlines.append(json.dumps({
            "application": "uniret", "query_id": qid, "client_id": client, "user_query": text,
            "timestamp": _stamp(day, second), "object_id_field": "doc_id", "query_response_id": f"r-{qid}",
            "query_response_hit_ids": hits, "query_attributes": {"bundle_version": "v1", "mode": "uni", "k": DEPTH}}))
        for pos, doc in enumerate(hits, 1):
            elines.append(json.dumps(_event("impression", qid, client, day, second + 1, doc, pos)))
            if rng.random() < THETA[pos - 1] * (0.95 if doc in relevant else 0.1):
                elines.append(json.dumps(_event("click", qid, client, day, second + 2, doc, pos)))
    for kind, lines in (("ubi_queries", qlines), ("ubi_events", elines)):
        folder = log_dir / kind / day
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{writer}.jsonl").write_text("".join(line + "\n" for line in lines))
    return qlines, elines


def garbage(day: str, known_query: str, doc: str) -> list[tuple[str, str, str]]:
    """(kind, line, the reason the stage must give) for each kind of bad record."""
    good = _event("click", known_query, "c", day, 5, doc, 1)
    bad = []

    def variant(reason: str, **change) -> None:
        ev = copy.deepcopy(good)
        for key, value in change.items():
            if key == "ordinal":
                ev["event_attributes"]["position"]["ordinal"] = value
            elif key == "object_id":
                ev["event_attributes"]["object"]["object_id"] = value
            else:
                ev[key] = value
        bad.append(("ubi_events", json.dumps(ev), reason))

    bad.append(("ubi_events", '{"action_name": "click", "query_id": ', "not a JSON object"))
    bad.append(("ubi_queries", "[1, 2, 3]", "not a JSON object"))
    variant("query_id names a logged query", query_id="no-such-query")
    variant("object_id is in the corpus", object_id="no-such-doc")
    variant("position is at least 1 (1-based)", ordinal=0)
    variant("position within the depth the query's answer showed", ordinal=DEPTH + 5)
    variant("the object was shown at that position", ordinal=2)
    variant(f"timestamp inside its span {day}", timestamp=(datetime.now(UTC) + timedelta(days=3)).isoformat())
    variant("schema: timestamp is ISO 8601 with a zone", timestamp="yesterday")
    variant("schema: client_id is a non-empty string", client_id=7)
    variant("schema: event_attributes.position.ordinal is an integer", ordinal="1")
    bad.append(("ubi_queries", json.dumps({"query_id": "q-unknown-docs", "client_id": "c", "user_query": "x",
                                           "timestamp": _stamp(day, 9), "query_response_hit_ids": ["nope"]}),
                "every shown doc id is in the corpus"))
    return bad


@pytest.fixture(scope="module")
def nfcorpus_ctx(tmp_path_factory, repo_root, shared_data):
    """() -> a StageContext (tiny profile, NFCorpus as the train dataset, its validated slice in place)."""
    root = tmp_path_factory.mktemp("feedback")
    base = make_context(repo_root / "params.yaml", "tiny", str(shared_data), root / "artifacts")
    raw = copy.deepcopy(base.params.raw)
    raw["data"]["train_dataset"] = "nfcorpus"
    raw["data"]["slice"] = {"max_queries": 60, "max_docs": 400, "seed": 13}
    raw["data"]["profiles"] = {}
    write_slice(BeirDataset(shared_data / "nfcorpus", "nfcorpus"),
                base.artifacts / "validate" / VALIDATED_DATA / "nfcorpus", SliceConfig(**raw["data"]["slice"]))
    atomic_write_json(base.artifacts / "validate" / MANIFEST, {"stage": "validate", "fixture": True})

    def make(artifacts: Path, start_model: str | None = None, registry: Path | None = None,
             **feedback_cfg) -> StageContext:
        params = copy.deepcopy(raw)
        params["feedback"].update(feedback_cfg)
        params["training"]["continual"]["start_model"] = start_model
        if registry is not None:
            params["registry"]["root"] = str(registry)
        if artifacts != base.artifacts and not (artifacts / "validate").exists():
            (artifacts / "validate").parent.mkdir(parents=True, exist_ok=True)
            os.symlink(base.artifacts / "validate", artifacts / "validate")
        return StageContext(Params(raw=params, profile="tiny", path=base.params.path), base.data_root, artifacts)

    return make, base.artifacts


@pytest.fixture(scope="module")
def slice_material(nfcorpus_ctx):
    """(doc ids, [(query text, relevant doc ids)]) of the validated NFCorpus slice."""
    _, artifacts = nfcorpus_ctx
    folder = artifacts / "validate" / VALIDATED_DATA / "nfcorpus"
    docs = [d.id for d in iter_corpus(folder / "corpus.jsonl")]
    data = BeirDataset(folder, "nfcorpus")
    qrels = read_qrels(data.qrels_path("train")) if data.qrels_path("train").is_file() else {}
    texts = {json.loads(line)["_id"]: json.loads(line)["text"] for line in (folder / "queries.jsonl").open()}
    known = set(docs)
    queries = [(texts[q], {d for d, g in rel.items() if g > 0 and d in known}) for q, rel in qrels.items() if q in texts]
    queries = [q for q in queries if q[1]] or [(t, set()) for t in texts.values()]
    assert len(docs) >= 100 and queries
    return docs, queries


def test_no_logs_skips_and_says_so(nfcorpus_ctx, tmp_path):
    make, _ = nfcorpus_ctx
    metrics = feedback.run(make(tmp_path / "a1", log_dir=None))
    assert metrics["status"] == "skipped: no logs (feedback.log_dir is null)"
    assert read_manifest(tmp_path / "a1" / "feedback")["metrics"]["status"].startswith("skipped: no logs")
    (tmp_path / "logs" / "ubi_queries" / TODAY.isoformat()).mkdir(parents=True)  # only the open day: not closed
    metrics = feedback.run(make(tmp_path / "a2", log_dir=str(tmp_path / "logs")))
    assert metrics["status"].startswith("skipped: no logs (no closed span under")
    assert sorted(p.name for p in (tmp_path / "a2" / "feedback").iterdir()) == [MANIFEST]


def test_window_pairs_judgments_and_propensities(nfcorpus_ctx, slice_material, tmp_path):
    make, _ = nfcorpus_ctx
    docs, queries = slice_material
    logs = tmp_path / "logs"
    for offset, n in ((20, 30), (3, 400), (2, 400), (1, 150), (0, 20)):  # 20: outside the window; 0: still open
        write_span(logs, _day(offset), n, docs, queries, seed=offset)
    ctx = make(tmp_path / "art", log_dir=str(logs), window_days=7)
    metrics = feedback.run(ctx)
    out = ctx.stage_dir("feedback")

    assert metrics["window"] == {"train": [_day(3), _day(2)], "heldout": _day(1)}
    assert metrics["rejected"] == 0 and metrics["train_sessions"] == 800 and metrics["heldout_sessions"] == 150
    ips = [json.loads(line) for line in (out / feedback.IPS_PAIRS).open()]
    naive = [json.loads(line) for line in (out / feedback.NAIVE_PAIRS).open()]
    assert ips and len(ips) == len(naive) == metrics["ips_pairs"]
    # random orders identify every rank: every held-out click gets its IPS weight, none is left out
    assert metrics["ips_judgments"]["judgments"] > 0 and metrics["ips_judgments"]["left_out"] == {}
    heldout_clients = {f"client-{_day(1)}-{n}" for n in range(17)}
    assert not {p["client_id"] for p in ips} & heldout_clients  # the held-out day never trains
    assert all(1.0 <= p["weight"] <= 10.0 for p in ips) and all(p["weight"] == 1.0 for p in naive)
    assert max(p["weight"] for p in ips) > 2.0  # deep clicks are up-weighted
    shown = {(r["query"], r["doc_id"]): r["shown"] for r in map(json.loads, (out / feedback.SHOWN_FILE).open())}
    assert sum(shown.values()) == 800 * DEPTH  # every training impression within depth, none of the held-out day
    assert all(shown[(p["query"], p["doc_id"])] >= 1 for p in ips)  # every clicked pair was shown

    table = {row["position"]: row for row in json.loads((out / feedback.PROPENSITIES).read_text())["table"]}
    for pos in range(1, DEPTH + 1):  # relative to rank 1, as IPS uses them; 800 random-order sessions
        assert abs(table[pos]["relative"] - THETA[pos - 1] / THETA[0]) < 0.12, (pos, table[pos])

    heldout_ids = {json.loads(line)["_id"] for line in (out / feedback.HELDOUT_QUERIES).open()}
    for name in (feedback.COEC_QRELS, feedback.CLICK_MODEL_QRELS, feedback.IPS_QRELS):
        rows = [line.split("\t") for line in (out / name).read_text().splitlines()[1:]]
        assert rows and {r[0] for r in rows} <= heldout_ids and {r[1] for r in rows} <= set(docs)
        assert any(float(r[2]) > 0 for r in rows)  # not all zero
    spans = json.loads((out / feedback.SPANS_JSON).read_text())
    assert set(spans["spans"]) == {_day(3), _day(2), _day(1)} and all(s["hashes"] for s in spans["spans"].values())


def test_an_unchanged_window_leaves_the_output_untouched(nfcorpus_ctx, slice_material, tmp_path):
    """The stage always runs under DVC; rewriting an identical result would rerun the index stage every night."""
    make, _ = nfcorpus_ctx
    docs, queries = slice_material
    logs = tmp_path / "logs"
    for offset in (2, 1):
        write_span(logs, _day(offset), 60, docs, queries, seed=offset)
    art = tmp_path / "art"
    feedback.run(make(art, log_dir=str(logs)))
    manifest = art / "feedback" / MANIFEST
    before = (manifest.read_bytes(), manifest.stat().st_mtime_ns)
    feedback.run(make(art, log_dir=str(logs)))
    assert (manifest.read_bytes(), manifest.stat().st_mtime_ns) == before
    # an older version's output (no IPS judgments yet) is derived again, whatever else is the same
    (art / "feedback" / feedback.IPS_QRELS).unlink()
    feedback.run(make(art, log_dir=str(logs)))
    assert (art / "feedback" / feedback.IPS_QRELS).is_file() and manifest.stat().st_mtime_ns != before[1]
    feedback.run(make(art, log_dir=str(logs), clip=5.0))  # another setting: derived again
    assert json.loads(manifest.read_text())["params"]["feedback"]["clip"] == 5.0
    write_span(logs, _day(1), 5, docs, queries, seed=99, writer="late")  # a span changed: derived again
    assert feedback.run(make(art, log_dir=str(logs), clip=5.0))["train_sessions"] == 60
    assert json.loads(manifest.read_text())["metrics"]["heldout_sessions"] == 65
    skipped = make(tmp_path / "none", log_dir=None)
    feedback.run(skipped)
    first = (tmp_path / "none" / "feedback" / MANIFEST).stat().st_mtime_ns
    feedback.run(skipped)
    assert (tmp_path / "none" / "feedback" / MANIFEST).stat().st_mtime_ns == first


def _point(registry: Path, version: str) -> None:
    """production.json naming `version` (what a promotion or a rollback leaves)."""
    registry.mkdir(parents=True, exist_ok=True)
    (registry / "production.json").write_text(json.dumps({"version": version, "bundle": f"bundles/{version}",
                                                          "history": []}))


def test_production_changes_the_output_only_when_continual_starts_from_it(nfcorpus_ctx, tmp_path):
    """The registry lives outside the project: through this always-run stage, whose output continual
    reads in dvc.yaml, a promotion or a rollback reruns continual under `dvc repro` when it warm-starts
    from production (`start_model: production`), and only then."""
    make, _ = nfcorpus_ctx
    registry = tmp_path / "registry"
    warm = make(tmp_path / "warm", start_model="production", registry=registry, log_dir=None)
    manifest = tmp_path / "warm" / "feedback" / MANIFEST
    assert feedback.run(warm)["status"].startswith("skipped: no logs")
    assert read_manifest(manifest.parent)["production_start"] == {"stage": "continual", "version": None}
    for version in ("v1", "v2", "v1"):  # a promotion, another, a rollback
        _point(registry, version)
        feedback.run(warm)
        assert read_manifest(manifest.parent)["production_start"] == {"stage": "continual", "version": version}
    before = (manifest.read_bytes(), manifest.stat().st_mtime_ns)
    feedback.run(warm)  # nothing moved: the output stays as it was
    assert (manifest.read_bytes(), manifest.stat().st_mtime_ns) == before
    (registry / "production.json").write_text("{broken")
    feedback.run(warm)  # recorded, not raised: the continual stage fails on it, naming the file
    start = read_manifest(manifest.parent)["production_start"]
    assert start["version"] is None and "production.json" in start["unreadable"]

    cold = make(tmp_path / "cold", registry=registry, log_dir=None)  # start_model null, the default
    feedback.run(cold)
    manifest = tmp_path / "cold" / "feedback" / MANIFEST
    before = (manifest.read_bytes(), manifest.stat().st_mtime_ns)
    _point(registry, "v2")
    feedback.run(cold)
    assert (manifest.read_bytes(), manifest.stat().st_mtime_ns) == before
    assert read_manifest(manifest.parent)["production_start"] is None


def test_a_promotion_rewrites_the_manifest_alone(nfcorpus_ctx, slice_material, tmp_path):
    """With the same spans and settings, a new production version is recorded without deriving the
    window again: nothing the stage derives reads a model."""
    make, _ = nfcorpus_ctx
    docs, queries = slice_material
    logs, registry, art = tmp_path / "logs", tmp_path / "registry", tmp_path / "art"
    for offset in (2, 1):
        write_span(logs, _day(offset), 60, docs, queries, seed=offset)
    _point(registry, "v1")
    ctx = make(art, start_model="production", registry=registry, log_dir=str(logs))
    feedback.run(ctx)
    out = art / "feedback"

    def derived() -> dict:
        return {p.relative_to(out): (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("*")
                if p.is_file() and p.name != MANIFEST}

    files, old = derived(), read_manifest(out)
    assert len(files) >= 5 and old["production_start"] == {"stage": "continual", "version": "v1"}
    _point(registry, "v2")  # a promotion
    assert feedback.run(ctx) == old["metrics"]
    new = read_manifest(out)
    assert new["production_start"] == {"stage": "continual", "version": "v2"}
    assert {k: v for k, v in new.items() if k != "production_start"} == {k: v for k, v in old.items() if k != "production_start"}
    assert derived() == files  # the derived files are the first run's, not written again


def test_a_day_with_30_percent_garbage_keeps_every_valid_record(nfcorpus_ctx, slice_material, tmp_path):
    make, _ = nfcorpus_ctx
    docs, queries = slice_material
    logs = tmp_path / "logs"
    write_span(logs, _day(2), 60, docs, queries, seed=2)
    qlines, elines = write_span(logs, _day(1), 60, docs, queries, seed=1)
    first = json.loads(qlines[0])
    bad = garbage(_day(1), first["query_id"], first["query_response_hit_ids"][0])
    bad += [("ubi_events", elines[3], "the same event seen before"), ("ubi_queries", qlines[5], "query_id seen before")]
    valid = len(qlines) + len(elines)
    copies = max(1, round(0.3 * valid / (1 - 0.3) / len(bad)))  # 30% of the day's records are garbage
    for kind, line, _ in bad * copies:
        with (logs / kind / _day(1) / "host-1-1.jsonl").open("a") as fh:
            fh.write(line + "\n")

    metrics = feedback.run(make(tmp_path / "art", log_dir=str(logs)))
    day = metrics["spans"][_day(1)]
    assert day["queries"] == len(qlines) and day["events"] == len(elines)  # every valid record kept
    assert day["rejected"] == len(bad) * copies and 0.28 < day["reject_share"] < 0.32
    for _, _, reason in bad:
        assert day["reasons"].get(reason, 0) >= copies, (reason, day["reasons"])
    rejects = [json.loads(line) for line in (tmp_path / "art" / "feedback" / feedback.REJECTS).open()]
    assert len(rejects) == day["rejected"] and all(r["reasons"] and r["file"] and r["line"] for r in rejects)


def test_fails_above_the_reject_share_naming_it_and_the_file(nfcorpus_ctx, slice_material, tmp_path):
    make, _ = nfcorpus_ctx
    docs, queries = slice_material
    logs = tmp_path / "logs"
    write_span(logs, _day(1), 10, docs, queries, seed=1)
    with (logs / "ubi_events" / _day(1) / "host-1-1.jsonl").open("a") as fh:
        fh.write("not json\n" * 200)
    ctx = make(tmp_path / "art", log_dir=str(logs), reject_share_max=0.5)
    with pytest.raises(StageFailed, match=r"reject_share_max = 0\.5.*feedback\.rejects\.jsonl") as err:
        feedback.run(ctx)
    assert f"span {_day(1)}: 200 of" in str(err.value)
    assert not (tmp_path / "art" / "feedback").exists()  # nothing half-written
    assert sum(1 for _ in (tmp_path / "art" / feedback.FAILED_REJECTS).open()) == 200


@pytest.mark.slow
def test_stage_under_dvc_repro(dvc_project, shared_data, slice_material, tmp_path):
    docs, queries = slice_material
    logs = tmp_path / "logs"
    write_span(logs, _day(2), 40, docs, queries, seed=2)
    write_span(logs, _day(1), 30, docs, queries, seed=1)

    def edit(params: dict) -> None:
        params["data"].update(train_dataset="nfcorpus", eval_datasets=["nfcorpus"],
                              dev={**params["data"]["dev"], "datasets": []})
        params["data"]["profiles"]["tiny"]["slice"] = {"max_queries": 60, "max_docs": 400}
        params["feedback"]["log_dir"] = str(logs)
        params["training"]["continual"]["start_model"] = "production"
        params["registry"]["root"] = str(tmp_path / "registry")

    repo = dvc_project(tmp_path / "repo", edit)
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    def dvc(*args: str) -> str:
        proc = subprocess.run([str(bin_dir / "dvc"), *args], cwd=repo, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, f"dvc {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout + proc.stderr

    first = dvc("repro", "feedback")
    assert "Running stage 'validate'" in first and "Running stage 'feedback'" in first
    metrics = read_manifest(repo / "artifacts" / "feedback")["metrics"]
    assert metrics["window"] == {"train": [_day(2)], "heldout": _day(1)} and metrics["ips_pairs"] > 0
    lock = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]["feedback"]
    assert any(o["path"] == "artifacts/feedback" for o in lock["outs"])
    # a new closed day is new input: the next repro reads it (the stage is always re-run; its outputs say what changed)
    write_span(logs, _day(3), 20, docs, queries, seed=3)
    second = dvc("repro", "feedback")
    assert "Running stage 'feedback'" in second and "Running stage 'validate'" not in second
    assert read_manifest(repo / "artifacts" / "feedback")["metrics"]["window"]["train"] == [_day(3), _day(2)]

    def recorded() -> str:  # the hash dvc.lock holds of artifacts/feedback, which continual depends on
        outs = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]["feedback"]["outs"]
        return next(o["md5"] for o in outs if o["path"] == "artifacts/feedback")

    # a promotion, no new day: the registry is outside the project, yet dvc sees a changed input of continual
    before = recorded()
    _point(tmp_path / "registry", "v1")
    dvc("repro", "feedback")
    assert recorded() != before
    assert read_manifest(repo / "artifacts" / "feedback")["production_start"] == {"stage": "continual", "version": "v1"}


def test_forget_leaves_no_record_of_the_client(nfcorpus_ctx, slice_material, tmp_path, repo_root, shared_data):
    """After `uniret feedback forget`, neither the spans nor artifacts/feedback hold the client, and the
    derived outputs equal those of a run on logs that never had it."""
    import shutil

    from uniret.cli import main

    make, _ = nfcorpus_ctx
    docs, queries = slice_material
    logs = tmp_path / "logs"
    for offset in (3, 2, 1):
        write_span(logs, _day(offset), 120, docs, queries, seed=offset)
    client = f"client-{_day(2)}-16"
    with (logs / "ubi_events" / _day(2) / "host-1-1.jsonl").open("a") as fh:
        fh.write(f'{{"client_id": "{client}", "broken\n')  # a damaged record of the client: a reject
    ctx = make(tmp_path / "art", log_dir=str(logs))
    before = feedback.run(ctx)
    assert before["rejected"] == 1
    assert client in (ctx.stage_dir("feedback") / feedback.IPS_PAIRS).read_text()

    reference = tmp_path / "reference-logs"  # the same logs, the client's lines dropped by hand
    shutil.copytree(logs, reference)
    for path in reference.rglob("*.jsonl"):
        path.write_text("".join(line for line in path.read_text().splitlines(keepends=True) if client not in line))
    expected = make(tmp_path / "ref-art", log_dir=str(reference))
    feedback.run(expected)

    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(ctx.params.raw, sort_keys=False))
    assert main(["feedback", "forget", "--client-id", client, "--params", str(params), "--profile", "tiny",
                 "--data", str(shared_data), "--artifacts", str(ctx.artifacts)]) == 0

    out = ctx.stage_dir("feedback")
    for path in [*logs.rglob("*.jsonl"), *(p for p in out.rglob("*") if p.is_file())]:
        assert client not in path.read_text(), path
    for name in (feedback.IPS_PAIRS, feedback.NAIVE_PAIRS, feedback.SHOWN_FILE, feedback.COEC_QRELS,
                 feedback.CLICK_MODEL_QRELS, feedback.IPS_QRELS, feedback.HELDOUT_QUERIES, feedback.PROPENSITIES, feedback.REJECTS):
        assert (out / name).read_text() == (expected.stage_dir("feedback") / name).read_text(), name
    after = read_manifest(out)["metrics"]
    assert after["rejected"] == 0 and after["train_sessions"] < before["train_sessions"]
