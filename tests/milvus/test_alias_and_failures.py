"""The Milvus alias moves with promotion and rollback and never onto a partial collection; a killed
export, an unreachable URI and another bundle's collection are clear errors (real Milvus Lite)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from uniret.cli import main
from uniret.config.milvus import MilvusConfig
from uniret.core.errors import EngineError
from uniret.milvus.bundles import bundle_collection, export_bundle, milvus_searchers, switch_alias
from uniret.milvus.catalog import Catalog
from uniret.milvus.client import connect
from uniret.milvus.export import Exporter, ExportSource
from uniret.milvus.promotion import engine_hook
from uniret.milvus.search import open_collection
from uniret.registry.bundles import publish
from uniret.registry.pointer import read_pointer
from uniret.registry.promotion import promote, rollback

pytestmark = pytest.mark.faults

# Exports 300 random docs in batches of 100 and SIGKILLs itself at the third insert (200 rows in).
KILLED_EXPORT = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from uniret.config.milvus import MilvusConfig
    from uniret.milvus.client import connect
    from uniret.milvus.export import Exporter, ExportSource

    client = connect(sys.argv[1])
    real, calls = client.insert, []
    def insert(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    client.insert = insert
    vectors = np.random.default_rng(0).standard_normal((300, 8)).astype(np.float32)
    source = ExportSource([f"d{i}" for i in range(300)], dense=vectors, identity={"bundle_hash": "h1", "bundle_version": "v1"})
    Exporter(client, MilvusConfig(insert_batch=100)).export("uniret_killed", source, progress=False)
""")


def _synthetic(n: int = 300) -> ExportSource:
    vectors = np.random.default_rng(0).standard_normal((n, 8)).astype(np.float32)
    return ExportSource([f"d{i}" for i in range(n)], dense=vectors, identity={"bundle_hash": "h1", "bundle_version": "v1"})


def test_the_alias_follows_promotion_and_rollback(lite, exported, tiny_bundle, second_bundle, tmp_path):
    registry = tmp_path / "registry"
    cfg = MilvusConfig(uri=lite.uri, insert_batch=64, alias="uniret_promotion_test", export_on_promote=True)
    _, on_change = engine_hook(cfg)  # its own client on the same file: the one this process holds
    catalog = Catalog(lite.client, cfg.catalog)
    first = promote(registry, tiny_bundle, evaluation=None, decision=None, lineage={}, dvc_push=False,
                    on_change=on_change)
    assert catalog.alias(cfg.alias)["collection"] == exported.collection, first.engine
    second = promote(registry, second_bundle, evaluation=None, decision=None, lineage={}, dvc_push=False,
                     on_change=on_change)
    second_collection, _ = bundle_collection(cfg, second_bundle)
    moved = catalog.alias(cfg.alias)
    assert moved["collection"] == second_collection and moved["previous"] == exported.collection, second.engine
    assert "catalog only" in second.engine  # Milvus Lite implements no native alias: the catalog holds it
    back = rollback(registry, dvc_push=False, on_change=on_change)
    assert back.version == first.version == read_pointer(registry)["version"]
    assert catalog.alias(cfg.alias)["collection"] == exported.collection, back.engine


def test_the_alias_never_moves_onto_a_partial_collection(lite, exported):
    Exporter(lite.client, lite.cfg)._create("uniret_unfinished", _synthetic(10))  # created, never recorded complete
    catalog = Catalog(lite.client, lite.cfg.catalog)
    catalog.switch_alias("uniret_partial_test", exported.collection)
    with pytest.raises(EngineError, match="uniret_unfinished: not a complete export.*stays on " + exported.collection):
        catalog.switch_alias("uniret_partial_test", "uniret_unfinished")
    assert catalog.alias("uniret_partial_test")["collection"] == exported.collection


def test_a_killed_export_is_refused_then_rebuilt(tmp_path, repo_root):
    uri = str(tmp_path / "killed.db")
    env = {**os.environ, "PYTHONPATH": str(repo_root / "src")}
    done = subprocess.run([sys.executable, "-c", KILLED_EXPORT, uri], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == -9, done.stderr[-2000:]
    client = connect(uri)
    try:
        cfg = MilvusConfig()
        exporter = Exporter(client, cfg)
        client.load_collection("uniret_killed")
        assert exporter.count("uniret_killed") == 200  # two batches landed before the kill
        with pytest.raises(EngineError, match="uniret_killed: a partial export"):
            open_collection(client, cfg, "uniret_killed", [f"d{i}" for i in range(300)], {"bundle_hash": "h1"})
        with pytest.raises(EngineError, match="not a complete export"):
            Catalog(client, cfg.catalog).switch_alias(cfg.alias, "uniret_killed")
        again = exporter.export("uniret_killed", _synthetic(), progress=False)
        assert again.changed and again.rebuilt_partial and exporter.count("uniret_killed") == 300
        assert open_collection(client, cfg, "uniret_killed", [f"d{i}" for i in range(300)],
                               {"bundle_hash": "h1", "dense_dim": 8}).record["complete"]
    finally:
        client.close()


def test_another_bundles_collection_is_refused(lite, exported, second_bundle):
    with pytest.raises(EngineError, match=f"{exported.collection}: holds bundle .*not this bundle"):
        milvus_searchers(lite.client, lite.cfg, second_bundle, collection=exported.collection)


def test_a_collection_of_another_dimension_is_refused(lite, exported, tiny_bundle):
    name, identity = bundle_collection(lite.cfg, tiny_bundle)
    source = ExportSource(_synthetic(5).docids, dense=_synthetic(5).dense, identity=identity)
    Exporter(lite.client, lite.cfg).export("uniret_same_bundle_dim8", source, progress=False)
    with pytest.raises(EngineError, match=r"uniret_same_bundle_dim8: holds bundle .*\(dim 8, 5 docs\), but this "
                                          r"bundle .*: export the bundle again"):
        milvus_searchers(lite.client, lite.cfg, tiny_bundle, collection="uniret_same_bundle_dim8")


def test_an_unreachable_uri_is_one_clear_line(repo_root, tiny_bundle, capsys):
    from uniret.bench.server import free_port

    uri = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(EngineError, match=f"{uri}: cannot reach Milvus"):
        connect(uri, timeout_s=2)
    code = main(["export", "milvus", "--params", str(repo_root / "params.yaml"), "--bundle", str(tiny_bundle),
                 "--uri", "/no/such/folder/x.db"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and err == "uniret export: error: /no/such/folder/x.db: the folder of this Milvus Lite file " \
                                "does not exist"


def test_export_milvus_command_switches_the_alias(tmp_path, repo_root, tiny_bundle, capsys):
    uri = str(tmp_path / "cli.db")
    args = ["export", "milvus", "--params", str(repo_root / "params.yaml"), "--profile", "tiny", "--bundle",
            str(tiny_bundle), "--uri", uri, "--no-progress"]
    assert main([*args, "--switch-alias"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["changed"] and first["alias"]["collection"] == first["collection"] and first["docs_per_s"] > 0
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["changed"] is False


def test_export_switch_alias_refuses_an_unexported_bundle(lite, second_bundle, tmp_path):
    cfg = MilvusConfig(collection_prefix="uniret_never", alias="uniret_never_alias")
    with pytest.raises(EngineError, match="not a complete export"):
        switch_alias(lite.client, cfg, second_bundle)
    assert export_bundle(lite.client, cfg, second_bundle, progress=False).changed  # what promotion does first
    assert switch_alias(lite.client, cfg, second_bundle)["collection"].startswith("uniret_never_")


def test_published_bundles_share_the_collection_of_their_source(lite, exported, tiny_bundle, tmp_path):
    version = publish(tmp_path / "reg", tiny_bundle, evaluation=None, decision=None, lineage={})
    name, identity = bundle_collection(lite.cfg, tmp_path / "reg" / "bundles" / version)
    assert name == exported.collection and identity["bundle_version"] == version
