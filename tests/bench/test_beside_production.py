"""The candidate's served mode timed beside production's bundle, query by query (the gate's
latency-vs-production rule), on the real tiny bundle."""

from __future__ import annotations

import json
import shutil

from uniret.bench.production import beside_production
from uniret.data.beir import BeirDataset
from uniret.retrieval.bundle import read_bundle_manifest

ROUNDS = 2


def _queries(tiny_bundle, n=6) -> dict[str, str]:
    manifest = read_bundle_manifest(tiny_bundle)
    dataset = BeirDataset(tiny_bundle.parents[1] / "validate" / "datasets" / manifest["train_dataset"])
    return dict(list(dataset.split_queries("test").items())[:n])


def test_the_two_bundles_are_timed_round_by_round(tiny_bundle, tmp_path):
    production = tmp_path / "prod"
    shutil.copytree(tiny_bundle, production)
    queries = _queries(tiny_bundle)
    out = beside_production(tiny_bundle, production, "v1", "uni", queries, 10, 1, 2, ROUNDS, None)
    assert out["mode"] == "uni" and out["production_version"] == "v1" and out["queries"] == len(queries)
    for side in ("candidate", "production"):
        assert 0 < out[side]["p50_ms"] <= out[side]["p95_ms"]
    # the ratio of the medians of the raw times; the p50s shown are rounded to the microsecond
    assert abs(out["p50_vs_production"] - out["candidate"]["p50_ms"] / out["production"]["p50_ms"]) < 0.01
    assert out["p95_vs_production"] == round(out["candidate"]["p95_ms"] / out["production"]["p95_ms"], 3)
    assert len(out["per_round_p50_vs_production"]) == ROUNDS
    json.dumps(out)  # goes into bench.json as it is


def test_a_cold_start_or_a_mode_production_lacks_is_skipped_with_its_reason(tiny_bundle):
    queries = _queries(tiny_bundle, 2)
    cold = beside_production(tiny_bundle, None, None, "uni", queries, 10, 1, 0, 1, None)
    assert cold == {"skipped": "no production bundle (cold start): nothing to compare with"}
    odd = beside_production(tiny_bundle, tiny_bundle, "v1", "no_such_mode", queries, 10, 1, 0, 1, None)
    assert odd == {"skipped": "mode 'no_such_mode' not offered by the candidate and production bundle"}
