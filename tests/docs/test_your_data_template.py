"""docs/your-data.md's params template is a working params file: merged into params.yaml it loads
every section, names no BEIR dataset the gate would ignore, and `uniret validate` accepts a folder
of your own whose qrels judge some pairs 0 (not relevant)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from uniret import cli
from uniret.bench.runner import bench_config
from uniret.config import load_params
from uniret.config.sections import SliceConfig
from uniret.data.beir import BeirDataset
from uniret.data.slicing import write_slice
from uniret.registry.gate import resolve_gate_config, settings_notes

REPO = Path(__file__).resolve().parents[2]
HEADING = "### A params template for one collection"


def template() -> dict:
    """The first YAML block after the template's heading in docs/your-data.md."""
    text = (REPO / "docs" / "your-data.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(.*?)```", text[text.index(HEADING):], re.S)
    assert block, f"no yaml block after {HEADING!r}"
    return yaml.safe_load(block.group(1))


def _apply(params: dict, changes: dict) -> dict:
    for section, values in changes.items():
        params[section] = {**params[section], **values}
    return params


def test_the_template_is_a_valid_params_file_for_one_collection(tmp_path, shared_data):
    changes = template()
    root = tmp_path / changes["data"]["root"]  # relative to where uniret runs (the project folder)
    params = _apply(yaml.safe_load((REPO / "params.yaml").read_text()), changes)
    params["data"]["root"] = str(root)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    loaded = load_params(tmp_path / "params.yaml", "cpu")
    assert "data" in loaded.check_all()
    data = loaded.section("data")
    assert data.train_dataset == "mydocs" and data.eval_datasets == ["mydocs"] and data.ignored_dev_datasets() == []
    assert settings_notes(resolve_gate_config(loaded), data.eval_datasets)[1] == []  # no BEIR name left over
    assert bench_config(loaded).dataset == "mydocs"
    assert loaded.section("validate").min_score == 0 and loaded.section("evaluate").expected_scores == []

    # a folder of your own (real SciFact text under another name), some judgments 0: validate accepts it
    own = write_slice(BeirDataset(shared_data / "scifact"), root / "mydocs", SliceConfig(max_queries=8, max_docs=60, seed=3))
    corpus_ids = list(own.corpus())
    for split in ("train", "test"):
        path = own.root / "qrels" / f"{split}.tsv"
        judged = path.read_text().splitlines()
        qid = judged[1].split("\t")[0]
        extra = next(d for d in corpus_ids if f"{qid}\t{d}\t" not in "\n".join(judged))
        path.write_text("\n".join([*judged, f"{qid}\t{extra}\t0"]) + "\n")
    code = cli.main(["validate", "--params", str(tmp_path / "params.yaml"), "--profile", "cpu",
                     "--artifacts", str(tmp_path / "artifacts")])
    assert code == 0
    snapshot = BeirDataset(tmp_path / "artifacts" / "validate" / "datasets" / "mydocs")
    assert 0 in {s for q in snapshot.qrels("test").values() for s in q.values()}
