"""`uniret evaluate` on any BEIR folder: the evaluate stage's flags for scoring without the DAG.

Without these flags `uniret evaluate` is the DAG stage. With any of them it scores BM25, and the
given bundle and/or checkpoint, on the datasets under --data (uniret.evaluation.folder).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from uniret.commands.outputs import output_argument

FOLDER_FLAGS = ("datasets", "bundle", "checkpoint", "split", "out", "recipe")
PRODUCTION = "production"
DEFAULT_SPLIT = "test"
DEFAULT_OUT = "evaluate-folder"  # under --artifacts: beside, never over, the stage's artifacts/evaluate


def extend_parser(p: argparse.ArgumentParser) -> None:
    """Add the folder-evaluation flags to the evaluate stage's parser and route to `run`."""
    g = p.add_argument_group("evaluate any BEIR folder (no DAG artifacts needed)",
                             "give any of these to score BM25 (+ a bundle, + a checkpoint) on the datasets under --data")
    g.add_argument("--datasets", default=None,
                   help="comma-separated dataset folders under --data (default: every folder with a corpus.jsonl)")
    g.add_argument("--bundle", default=None,
                   help=f"a bundle folder, a registry version, or '{PRODUCTION}' (the registry's production bundle)")
    g.add_argument("--checkpoint", default=None, help="a model folder, e.g. artifacts/distill/model")
    g.add_argument("--recipe", default=None,
                   help="the checkpoint's recipe (default: its stage manifest, else params model.recipe)")
    g.add_argument("--split", default=None, help=f"qrels split to score (default: {DEFAULT_SPLIT})")
    output_argument(p, "--out", kind="replaced", group=g, default=None, help=f"output folder (default: <artifacts>/{DEFAULT_OUT})")
    p.set_defaults(func=run)


def resolve_bundle(params, value: str) -> Path:
    """A bundle folder from --bundle: 'production', an existing folder, or a version in the registry.

    A registry bundle (and any folder with a SHA256SUMS) is verified against its checksums first,
    as serving and rollback do: a damaged one is refused with one message naming its files.
    """
    from uniret.registry.bundles import bundle_dir
    from uniret.registry.configured import registry_root
    from uniret.registry.errors import RegistryError
    from uniret.registry.integrity import verified_bundle
    from uniret.registry.pointer import read_pointer

    root = registry_root(params)
    if value == PRODUCTION:
        pointer = read_pointer(root)
        if pointer is None:
            raise FileNotFoundError(f"{root / 'production.json'}: no production bundle promoted yet")
        path = bundle_dir(root, pointer["version"])
    elif Path(value).expanduser().is_dir():
        path = Path(value).expanduser()
    else:
        try:
            path = bundle_dir(root, value)
        except RegistryError as exc:
            raise FileNotFoundError(f"--bundle {value}: not a folder, and {exc}") from exc
    return verified_bundle(path, root, "not evaluated")


def check_dataset_names(root: Path, names: list[str]) -> None:
    """Each --datasets name is a folder directly under the data root holding a corpus.jsonl (no path:
    `../scifact` or `/etc` would read outside it); DataError naming the first that is not."""
    from uniret.core.errors import DataError, DataProblem

    known = None
    for name in names:
        if Path(name).name != name or name in (".", ".."):
            why = "a dataset is named by its folder under --data, not by a path"
        elif not (root / name / "corpus.jsonl").is_file():
            from uniret.evaluation.folder import find_datasets

            known = find_datasets(root) if known is None else known
            why = f"not found (no {name}/corpus.jsonl under the data root); datasets there: {', '.join(known) or 'none'}"
        else:
            continue
        raise DataError(DataProblem(root, None, "--datasets", f"{name!r}: {why}"))


def run(args: argparse.Namespace) -> int:
    """The DAG stage, or the folder evaluation when a folder flag is given."""
    if not any(getattr(args, f) is not None for f in FOLDER_FLAGS):
        from uniret.cli import run_stage_command

        return run_stage_command(args)
    from uniret.evaluation.folder import FolderRequest, evaluate_folder, find_datasets
    from uniret.runtime import make_context

    ctx = make_context(args.params, args.profile, args.data, args.artifacts)
    root = ctx.data_root
    if (root / "corpus.jsonl").is_file():  # --data names one dataset folder
        root, datasets = root.parent, [root.name]
    else:
        datasets = find_datasets(root)
    if args.datasets is not None:
        datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    if not datasets:
        raise FileNotFoundError(f"{root}: no dataset folders (with a corpus.jsonl) to evaluate; pass --datasets")
    check_dataset_names(root, datasets)  # at once: the checks after it import great-expectations (~20 s)
    request = FolderRequest(
        data_root=root, datasets=datasets, split=args.split or DEFAULT_SPLIT,
        out=Path(args.out) if args.out else ctx.artifacts / DEFAULT_OUT,
        bundle=resolve_bundle(ctx.params, args.bundle) if args.bundle else None,
        checkpoint=Path(args.checkpoint).expanduser() if args.checkpoint else None, recipe=args.recipe,
    )
    evaluate_folder(ctx.params, request)
    print(f"uniret evaluate: {', '.join(datasets)} ({request.split}) -> {request.out.resolve()}/metrics.md")
    return 0
