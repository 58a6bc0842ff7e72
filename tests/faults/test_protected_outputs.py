"""No output path may replace a registry bundle or write into a data root (issue 43): each command that
writes refuses such a path in one line, exit 1, before any work, and the registry and data survive
byte for byte (uniret.utils.owned.check_output_path)."""

from __future__ import annotations

import json

import pytest

from uniret.cli import main
from uniret.utils.owned import OWNER_STAMP, ProtectedPathError, check_output_path, registry_holding


def _registry(root):
    """A registry as promote leaves it: the pointer, one stamped bundle (uniret's own: replaceable by the
    old rule), the lock file."""
    bundle = root / "bundles" / "v1"
    bundle.mkdir(parents=True)
    (bundle / "manifest.json").write_text(json.dumps({**OWNER_STAMP, "version": "v1"}))
    (bundle / "dense.faiss").write_bytes(b"\x00" * 64)
    (root / "production.json").write_text(json.dumps({"version": "v1", "bundle": "bundles/v1"}))
    (root / ".registry.lock").touch()
    return root


def _all_refused(commands: dict[str, list[str]], needle: str, capsys) -> None:
    """Each command exits 1 with one error line holding `needle` and what was not done ("; not ...")."""
    for name, args in commands.items():
        assert main(args) == 1, name
        line = _one_error_line(capsys.readouterr().err, name.split()[0])
        assert needle in line and "; not " in line, line


def _one_error_line(err: str, command: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith(f"uniret {command}: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_the_rule_finds_a_registry_above_any_path_in_it(tmp_path):
    registry = _registry(tmp_path / "registry")
    for inside in (registry, registry / "bundles", registry / "bundles" / "v1", registry / "bundles" / "v1" / "new"):
        assert registry_holding(inside) == registry
        with pytest.raises(ProtectedPathError, match="inside the model registry"):
            check_output_path(inside)
    assert registry_holding(tmp_path / "artifacts") is None
    with pytest.raises(ProtectedPathError, match="inside the data root"):
        check_output_path(tmp_path / "data" / "validate", data_roots=(tmp_path / "data",))
    assert check_output_path(tmp_path / "elsewhere", data_roots=(tmp_path / "data",)) == tmp_path / "elsewhere"


def test_evaluate_and_export_refuse_a_bundle_of_the_registry(tmp_path, repo_root, small_data, capsys, snapshot):
    registry = _registry(tmp_path / "registry")
    before = snapshot(registry)
    bundle = registry / "bundles" / "v1"
    commands = {
        "evaluate": ["evaluate", "--params", str(repo_root / "params.yaml"), "--profile", "tiny", "--data",
                     str(small_data), "--datasets", "scifact", "--out", str(bundle)],
        "export": ["export", "opensearch", "--params", str(repo_root / "params.yaml"), "--bundle", str(bundle),
                   "--out", str(bundle)],
        "significance": ["significance", "bm25", "uni", "--params", str(repo_root / "params.yaml"), "--evaluated",
                         str(tmp_path), "--out", str(bundle / "x.json")],
        "bench": ["bench", "--params", str(repo_root / "params.yaml"), "--bundle", str(bundle), "--out", str(bundle)],
    }
    for command, args in commands.items():
        assert main(args) == 1, command
        line = _one_error_line(capsys.readouterr().err, command)
        assert f"refusing to write inside the model registry {registry}" in line, line
    assert snapshot(registry) == before


def test_a_stage_refuses_artifacts_in_the_data_root_before_any_work(tmp_path, repo_root, small_data, capsys,
                                                                    snapshot):
    before = snapshot(small_data)
    for artifacts in (small_data, small_data / "scifact"):
        rc = main(["validate", "--params", str(repo_root / "params.yaml"), "--profile", "tiny", "--data",
                   str(small_data), "--artifacts", str(artifacts)])
        assert rc == 1
        line = _one_error_line(capsys.readouterr().err, "validate")
        assert f"refusing to write inside the data root {small_data}" in line, line
    assert snapshot(small_data) == before  # nothing written: the check ran before the validation


def test_a_damaged_bundle_is_neither_exported_nor_measured(tmp_path, repo_root, capsys):
    from uniret.registry.integrity import write_checksums

    registry = _registry(tmp_path / "registry")
    bundle = registry / "bundles" / "v1"
    write_checksums(bundle)
    (bundle / "dense.faiss").write_bytes(b"\x01" * 64)  # damaged after publication
    params = ["--params", str(repo_root / "params.yaml")]
    commands = {
        "export opensearch": ["export", "opensearch", *params, "--registry", str(registry), "--out", str(tmp_path / "os")],
        "export milvus": ["export", "milvus", *params, "--registry", str(registry), "--uri", str(tmp_path / "m.db")],
        "bench": ["bench", *params, "--registry", str(registry), "--out", str(tmp_path / "bench")],
    }
    _all_refused(commands, "v1: failed verification (changed: dense.faiss)", capsys)
    assert not (tmp_path / "os").exists() and not (tmp_path / "m.db").exists()


def test_an_index_stage_bundle_damaged_later_is_neither_exported_measured_nor_published(tiny_bundle, tmp_path,
                                                                                         repo_root, capsys):
    """The index stage records its bundle's checksums, so a copy damaged after the stage (here a truncated
    query graph, which opening would find only at the first transformer query) is refused at once."""
    import os
    import shutil

    from uniret.registry.bundles import publish
    from uniret.registry.integrity import IntegrityError

    bundle = tmp_path / "bundle"
    shutil.copytree(tiny_bundle, bundle, copy_function=os.symlink)
    graph = bundle / "onnx" / "query.onnx"
    content = graph.read_bytes()
    graph.unlink()
    graph.write_bytes(content[: len(content) // 2])
    params = ["--params", str(repo_root / "params.yaml"), "--profile", "tiny"]
    commands = {
        "export opensearch": ["export", "opensearch", *params, "--bundle", str(bundle), "--out", str(tmp_path / "os")],
        "export milvus": ["export", "milvus", *params, "--bundle", str(bundle), "--uri", str(tmp_path / "m.db")],
        "bench": ["bench", *params, "--bundle", str(bundle), "--out", str(tmp_path / "bench")],
    }
    _all_refused(commands, "bundle: failed verification (changed: onnx/query.onnx)", capsys)
    assert not any((tmp_path / p).exists() for p in ("os", "m.db", "bench"))
    with pytest.raises(IntegrityError, match=r"changed: onnx/query.onnx\); not published"):
        publish(tmp_path / "registry", bundle, evaluation=None, decision=None, lineage={})
    assert not (tmp_path / "registry" / "bundles").exists() or not any((tmp_path / "registry" / "bundles").iterdir())


OUTPUT_FLAGS = {"--out", "--output", "--root", "--work"}  # what an argument that names an output is called


def _parsers(parser, path=()):
    """(command path, parser) of every subcommand, nested ones included."""
    import argparse

    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def test_every_output_argument_of_every_command_goes_through_the_one_rule():
    """A command that takes an output path declares it (uniret.commands.outputs.output_argument), so the
    command line checks it before the command runs: a new command cannot forget the rule."""
    from uniret.cli import build_parser
    from uniret.commands.outputs import DECLARED

    undeclared = []
    for path, parser in _parsers(build_parser()):
        declared = {dest for dest, _, _ in parser.get_default(DECLARED) or ()}
        for action in parser._actions:
            if OUTPUT_FLAGS & set(action.option_strings) and action.dest not in declared:
                undeclared.append(f"uniret {' '.join(path)} {action.option_strings[0]}")
    assert undeclared == []


def test_commands_that_wrote_anywhere_refuse_the_registry_and_the_data_root_before_any_work(
        tmp_path, repo_root, small_data, capsys, snapshot, monkeypatch):
    """issue 57, class 2: canary decide, simulate, the loop, gate-study, milvus-parity and pipeline compile
    wrote into a registry or the data root; now each exits 1 with one line naming the flag, and writes nothing."""
    monkeypatch.setenv("UNIRET_DATA", str(small_data))  # the data root every command reads
    registry = _registry(tmp_path / "registry")
    before, data_before = snapshot(registry), snapshot(small_data)
    params = ["--params", str(repo_root / "params.yaml")]
    for target, needle in ((registry / "out", "inside the model registry"), (small_data / "out", "inside the data root")):
        commands = {
            "canary": (["canary", "decide", *params, "--out", str(target)], "--out"),
            "simulate": (["simulate", *params, "--out", str(target / "s.json")], "--out"),
            "loop run": (["loop", "run", "--arm", "naive", *params, "--work", str(target)], "--work"),
            "loop report": (["loop", "report", "--arm", f"a={tmp_path}", "--out", str(target)], "--out"),
            "gate-study": (["gate-study", "run", *params, "--root", str(target)], "--root"),
            "export": (["export", "milvus-parity", *params, "--out", str(target)], "--out"),
            "pipeline": (["pipeline", "compile", *params, "--output", str(target / "p.yaml")], "--output"),
        }
        for name, (args, flag) in commands.items():
            assert main(args) == 1, name
            line = _one_error_line(capsys.readouterr().err, name.split()[0])
            assert f"{flag} {target}" in line and needle in line, line
            assert not target.exists(), name
    assert snapshot(registry) == before and snapshot(small_data) == data_before
