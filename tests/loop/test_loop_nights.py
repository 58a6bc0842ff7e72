"""The learning loop end to end on the tiny profile: the real server on 127.0.0.1, simulated users,
the spans dated night by night, the feedback/index/evaluate stages and a promotion each night, the report.

Two nights: night 1's traffic is held out (the newest day), night 2 trains on it, so the click
examples reach the static tower and, with --retrain-steps, the transformer (night 1 has no training
clicks and keeps its checkpoint); with --canary-share, day 2 interleaves production with night 0's bundle. A factory checkpoint (untrained heads) starts it: the test checks
the loop's plumbing, not what it learns (results/loop/ holds that, on the cpu profile).
"""

from __future__ import annotations

import json
import subprocess
import sys

from uniret.config.models import ModelConfig
from uniret.models.factory import build_model, save_model
from uniret.retrieval.bundle import fusion_weights_of, read_bundle_manifest
from uniret.runtime import read_manifest
from uniret.ubi import EVENTS, QUERIES, list_days
from uniret.utils.files import hash_path

SET = {"data": {"eval_datasets": ["nfcorpus"]}, "evaluate": {"sources": ["bm25", "bundle"]}}


def _uniret(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "uniret", *args], cwd=cwd, capture_output=True, text=True, timeout=800)


def test_two_nights_learn_from_clicks_and_promote_each_night(tmp_path, repo_root, shared_data):
    checkpoint = tmp_path / "start" / "model"
    save_model(build_model(ModelConfig(arch="unifier", backbone="splade-tiny", query_max_length=32, doc_max_length=96)),
               checkpoint)
    work = tmp_path / "debiased"
    run = _uniret("loop", "run", "--arm", "debiased", "--work", str(work), "--nights", "2", "--sessions", "80",
                  "--profile", "tiny", "--checkpoint", str(checkpoint), "--cache", str(tmp_path / "none"),
                  "--data", str(shared_data), "--params", str(repo_root / "params.yaml"), "--randpair-share", "0.3",
                  "--retrain-steps", "2", "--canary-share", "0.5", "--set", json.dumps(SET), cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    doc = json.loads((work / "loop.json").read_text())
    nights = {n["night"]: n for n in doc["nights"]}
    assert sorted(nights) == [0, 1, 2]
    assert len({n["version"] for n in nights.values()}) >= 2  # promoted: production moved with the tower
    days = list_days(work / "logs")
    assert days == sorted({nights[1]["day"], nights[2]["day"]}) and nights[1]["day"] < nights[2]["day"]
    for night in (1, 2):
        sim = nights[night]["simulation"]
        assert sim["sessions_logged"] == 80 and not sim["failures"] and sim["records_dated"] > 80
    fb1, fb2 = nights[1]["feedback"], nights[2]["feedback"]
    assert fb1["window"] == {"train": [], "heldout": nights[1]["day"]} and fb1["train_sessions"] == 0
    assert fb2["window"] == {"train": [nights[1]["day"]], "heldout": nights[2]["day"]}
    assert fb2["train_sessions"] == 80  # every simulated search of day 1 joined, none rejected
    assert nights[2]["clicks_used"]["kind"] == "ips" and nights[2]["clicks_used"]["examples"] > 0
    assert nights[2]["finetune_queries"] > 0 and nights[1]["finetune_queries"] == 0
    # the transformer retrained on night 2's clicks alone, from the checkpoint night 1's bundle was built from
    assert "continual" not in nights[1]["stage_seconds"] and "retrained" not in nights[1]
    assert nights[2]["retrained"]["source"] == "ips" and nights[2]["retrained"]["labels"] is False
    assert nights[2]["retrained"]["examples"] > 0 and doc["retrain_steps"] == 2
    continual = read_manifest(work / "artifacts" / "continual")["metrics"]
    assert continual["steps"] == 2
    # warm-started as a nightly would (start_model: production): from the checkpoint published with night 1's bundle
    published = [work / "registry" / "bundles" / nights[n]["version"] / "checkpoint" for n in (0, 1, 2)]
    assert continual["warm_start"] == {"asked": "production", "from": str(published[1]), "version": nights[1]["version"]}
    assert hash_path(published[0]) == hash_path(published[1])  # night 1 trained nothing: night 0's model
    indexed = read_manifest(work / "artifacts" / "index")["inputs"]["model"]  # the retrained model, not the start
    assert indexed == hash_path(work / "artifacts" / "continual" / "model") != hash_path(published[1])
    assert hash_path(published[2]) == indexed  # and night 2's bundle carries it for the next night
    # the traffic domain's dev split is the loop's only dev set: the other corpora keep production's weights (E77)
    for night in (1, 2):
        served, carried = (read_bundle_manifest(work / "registry" / "bundles" / nights[n]["version"])
                           for n in (night - 1, night))
        assert fusion_weights_of(carried, other_corpus=True) == fusion_weights_of(served, other_corpus=True)
        assert carried["fusion"]["modes"]["hybrid_fast"]["zero_shot_sets"] == []  # configured, not learned
    records = [json.loads(line) for f in (work / "logs" / QUERIES).rglob("*.jsonl") for line in f.read_text().splitlines()]
    swapped = [r for r in records if "randpair" in r["query_attributes"]]
    # day 2 interleaves night 1's production with night 0's bundle on about half the searches; day 1 had no canary
    assert nights[1]["canary"] == {"candidate": nights[0]["version"], "production": nights[1]["version"], "share": 0.5}
    assert "canary" not in nights[2]  # the last night starts none
    # day 2's users came once the one-worker server had loaded the canary's candidate too, not just production
    assert nights[1]["simulation"]["canary"] is None and "interleaved in 50%" in nights[2]["simulation"]["canary"]
    mixed = {day: [r for r in records if r["timestamp"].startswith(day)
                   and r["query_attributes"].get("interleaved_with") == nights[0]["version"]] for day in days}
    assert not mixed[nights[1]["day"]] and 10 < len(mixed[nights[2]["day"]]) < 70
    assert 0 < len(swapped) < len(records)  # RandPair at 0.3: some answers shown with a swap, logged as shown
    for kind in (QUERIES, EVENTS):  # every record inside its simulated day
        for day in days:
            for f in (work / "logs" / kind / day).glob("*.jsonl"):
                assert all(json.loads(line)["timestamp"].startswith(day) for line in f.read_text().splitlines())

    out = tmp_path / "report"
    rep = _uniret("loop", "report", "--arm", f"debiased={work}", "--out", str(out), "--data", str(shared_data),
                  "--params", str(repo_root / "params.yaml"), cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr[-3000:]
    report = json.loads((out / "loop.json").read_text())
    gain = report["arms"]["debiased"]["gain_last_vs_night0"]
    assert gain["low"] <= gain["diff"] <= gain["high"] and gain["queries"] > 0
    assert (work / "nights" / "2" / "per_query" / "nfcorpus.json").is_file()
    assert report["arms"]["debiased"]["zero_shot_check"] is None  # only the domain evaluated: no other set to check
    cost = report["arms"]["debiased"]["randpair_cost"]  # graded on the traffic's qrels, every logged answer
    assert cost["answers"] == 160 and 0 < cost["swapped"] < 160 and cost["ndcg10_shown_minus_ranked"] <= 0.05
    assert (out / "loop.png").stat().st_size > 1000 and "| 2 |" in (out / "loop.md").read_text()
    assert "transformer retrained 2 steps a night on the clicks" in (out / "loop.md").read_text()
    # the gate's newest-traffic check held against the simulator's truth, on what each night kept of its held-out day
    check = report["arms"]["debiased"]["traffic_check"]
    assert [n["night"] for n in check["nights"]] == [1, 2]
    for n in check["nights"]:
        assert (work / "nights" / str(n["night"]) / "newest_traffic" / "runs" / "production.trec").is_file()
        assert n["candidate_system"] == "hybrid_fast" and n["truth"]["queries"] > 0
        assert n["ndcg@10"]["queries"] == n["condensed_ndcg@10"]["queries"] > 0
    assert check["agreement"]["condensed_ndcg@10"]["nights"] == 2
    assert "The gate's newest-traffic check against the truth" in (out / "loop.md").read_text()
    # E96's other direction (lab/traffic_check_rollback.py): night 0's bundle against night 2's production
    lab = subprocess.run([sys.executable, str(repo_root / "lab" / "traffic_check_rollback.py"), str(work), "--data",
                          str(shared_data), "--out", str(tmp_path / "rollback.json")], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert lab.returncode == 0, lab.stderr[-3000:]
    [row] = json.loads((tmp_path / "rollback.json").read_text())["rows"]
    assert row["night"] == 2 and row["production"] == nights[2]["version"] and row["truth"]["queries"] > 0
    assert row["condensed_ndcg@10"]["queries"] == row["ndcg@10"]["queries"] > 0
    mixing = report["arms"]["debiased"]["interleaving_cost"]  # day 2's interleaved answers against production's own
    assert 0 < mixing["interleaved"] <= len(mixed[nights[2]["day"]]) and mixing["compared"] <= mixing["interleaved"]
    if mixing["compared"]:  # a head query answered both ways on day 2 (Zipf traffic: nearly always)
        assert abs(mixing["ndcg10_interleaved_minus_production"]) <= 1.0
        assert "The canary's interleaving" in (out / "loop.md").read_text()
