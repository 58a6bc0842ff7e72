"""Where datasets live: --data / $UNIRET_DATA, then params.yaml data.root, then ../shared/data."""

from __future__ import annotations

import os
from pathlib import Path

from uniret.core.errors import DataError, DataProblem
from uniret.data.beir import BeirDataset

DATA_ENV = "UNIRET_DATA"


def shared_data_candidates(start: Path | None = None) -> list[Path]:
    """../shared/data relative to the working directory and to the installed source tree."""
    here = Path(__file__).resolve()
    starts = [Path(start or Path.cwd()).resolve(), here.parents[3]]
    return [s.parent / "shared" / "data" for s in starts]


def resolve_data_root(cli_value: str | None = None, params_value: str | None = None) -> Path:
    """Resolve the data root in the documented order; error if none exists."""
    for source, value in (("--data", cli_value), (DATA_ENV, os.environ.get(DATA_ENV)), ("params.yaml data.root", params_value)):
        if value:
            path = Path(value).expanduser()
            if not path.is_dir():
                raise DataError(DataProblem(path, None, None, f"data root from {source} is not a directory"))
            return path.resolve()
    for cand in shared_data_candidates():
        if cand.is_dir():
            return cand
    raise DataError(
        DataProblem(Path("../shared/data"), None, None, f"no data root: pass --data, set ${DATA_ENV} or data.root in params.yaml")
    )


def open_dataset(root: Path, name: str) -> BeirDataset:
    """The dataset folder `name` under `root`, checked to exist."""
    path = Path(root) / name
    if not (path / "corpus.jsonl").is_file():
        raise DataError(DataProblem(path / "corpus.jsonl", None, None, f"dataset {name!r} not found under {root}"))
    return BeirDataset(path, name)
