"""Serving settings from params and the command line: bundle source, admin token, bounds."""

from __future__ import annotations

import pytest

from uniret.cli import build_parser
from uniret.config import Params
from uniret.config.loader import ConfigError
from uniret.serving.settings import settings_from_params
from uniret.serving.source import BundleSource, SourceError, bundle_version


def _params(tmp_path, **sections) -> Params:
    return Params(raw=dict(sections), profile="tiny", path=tmp_path / "params.yaml")


def test_registry_from_params_relative_to_the_params_file(tmp_path, monkeypatch):
    monkeypatch.delenv("UNIRET_ADMIN_TOKEN", raising=False)
    s = settings_from_params(_params(tmp_path, registry={"root": "reg"}, serve={"admin_token": "from-params"}))
    assert s.source.registry_root == tmp_path / "reg" and s.source.bundle is None
    assert s.admin_token == "from-params"


def test_env_token_wins_and_cli_overrides(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_TOKEN", "from-env")
    p = _params(tmp_path, registry={"root": "reg", "token_env": "MY_TOKEN"}, serve={"admin_token": "from-params"})
    s = settings_from_params(p, bundle=str(tmp_path / "b"), port=9123)
    assert s.admin_token == "from-env" and s.source.bundle == tmp_path / "b" and s.serve.port == 9123
    s = settings_from_params(p, registry=str(tmp_path / "other"))
    assert s.source.registry_root == tmp_path / "other"


def test_no_source_and_no_registry_section_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="--bundle or --registry"):
        settings_from_params(_params(tmp_path))


def test_bounds_are_validated(tmp_path):
    with pytest.raises(ConfigError, match="default_k"):
        _params(tmp_path, serve={"max_k": 5, "default_k": 10}).section("serve")
    with pytest.raises(ConfigError, match="max_body_bytes"):
        _params(tmp_path, serve={"max_body_bytes": 0}).section("serve")


def test_serve_takes_bundle_or_registry_not_both():
    parser = build_parser()
    args = parser.parse_args(["serve", "--bundle", "b", "--port", "9000"])
    assert (args.bundle, args.port, args.host) == ("b", 9000, None)
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--bundle", "b", "--registry", "r"])


def test_source_reads_the_pointer_and_checks_the_version(tmp_path):
    (tmp_path / "bundles" / "v3").mkdir(parents=True)
    (tmp_path / "bundles" / "v3" / "manifest.json").write_text('{"format": 1}')
    source = BundleSource(registry_root=tmp_path)
    with pytest.raises(SourceError, match="no production bundle"):
        source.resolve()
    (tmp_path / "production.json").write_text('{"version": "v3", "bundle": "bundles/v3"}')
    assert source.resolve() == (tmp_path / "bundles" / "v3", "v3")
    with pytest.raises(SourceError, match="asked for 'v4'"):
        source.resolve(expected_version="v4")
    path, version = source.resolve("bundles/v3")  # relative: from the registry root
    assert path == tmp_path / "bundles" / "v3" and version.startswith("v3-")  # no version in its manifest
    assert version == bundle_version(path)


def test_a_milvus_lite_file_is_served_by_one_worker(tmp_path, caplog):
    """Each worker would start its own Lite server on the file; a server URI keeps the workers."""
    p = _params(tmp_path, milvus={}, serve={"workers": 2})
    with caplog.at_level("WARNING", logger="uniret.serving"):
        lite = settings_from_params(p, bundle=str(tmp_path / "b"), engine="milvus", uri=str(tmp_path / "m.db"))
    assert lite.serve.workers == 1 and "Milvus Lite file" in caplog.text
    server = settings_from_params(p, bundle=str(tmp_path / "b"), engine="milvus", uri="http://127.0.0.1:19530")
    assert server.serve.workers == 2
