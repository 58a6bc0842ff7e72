"""The one output rule of the command line: every command that writes declares its output arguments
here, and `uniret.cli.main` checks them all before the command does any work (through the parser
default CHECK, which this module sets: the CLI layer does not import the commands package).

Whatever the command, an output inside a model registry or inside the data root the command reads
(--data, $UNIRET_DATA, params data.root, ../shared/data) is refused (uniret.utils.owned), and a
folder argument must be a folder. Whether an existing path may be replaced stays with the writer,
which knows its own files (a stamped manifest, a compiled pipeline's header, --force):
uniret.utils.owned.check_output_path and the atomic renames of uniret.utils.files.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Literal

from uniret.utils.owned import NotOwnedError, refuse_in_data_roots, refuse_in_registry

# "folder": the command writes named files into it, keeping the rest (bench --out); "replaced": the
# writer replaces the path whole, and first checks it may (uniret.utils.owned.check_output_path)
Kind = Literal["folder", "replaced"]
DECLARED = "_output_arguments"  # the parser default listing (dest, flag, kind)
CHECK = "check_outputs"  # the parser default holding the check `uniret.cli.main` calls first


def output_argument(parser: argparse.ArgumentParser, flag: str, *, kind: Kind, group=None, **kwargs) -> argparse.Action:
    """`parser.add_argument(flag, **kwargs)` (in `group` when given), declared as an output the command
    line checks first."""
    action = (group or parser).add_argument(flag, **kwargs)
    declared = parser.get_default(DECLARED) or ()
    parser.set_defaults(**{DECLARED: (*declared, (action.dest, flag, kind)), CHECK: check_outputs})
    return action


def _data_roots(args: argparse.Namespace) -> tuple[Path, ...]:
    """The data root this command reads; none when it cannot be resolved (the command says why later)."""
    from uniret.data.roots import DATA_ENV, resolve_data_root

    params_root = None
    given = getattr(args, "data", None) or os.environ.get(DATA_ENV)  # resolve_data_root's first two sources
    if not given and getattr(args, "params", None) and Path(args.params).is_file():
        try:
            from uniret.config import load_params

            params_root = load_params(args.params, getattr(args, "profile", None)).section("data").root
        except Exception:  # noqa: BLE001 - a broken params file is the command's own error to report
            params_root = None
    try:
        return (resolve_data_root(getattr(args, "data", None), params_root),)
    except Exception:  # noqa: BLE001 - no data root: nothing to protect here
        return ()


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse the declared output arguments of `args` per the module doc (ProtectedPathError,
    NotOwnedError), before the command runs."""
    declared = getattr(args, DECLARED, ()) or ()
    given = [(getattr(args, dest, None), flag, kind) for dest, flag, kind in declared]
    given = [(Path(value), flag, kind) for value, flag, kind in given if value not in (None, "")]
    if not given:
        return
    roots = _data_roots(args)
    for path, flag, kind in given:
        try:
            refuse_in_data_roots(path, roots)
            refuse_in_registry(path)
        except NotOwnedError as exc:
            raise type(exc)(f"{flag} {exc}") from None
        if kind == "folder" and os.path.lexists(path) and not path.is_dir():
            raise NotOwnedError(f"{flag} {path}: not a folder: this command writes its files into a folder; "
                                "choose another output path")
