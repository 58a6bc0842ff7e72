"""Checksums of published bundles: recorded at promotion, verified before serving and rollback.

Every file of a bundle is listed with its sha256 in `<bundle>/SHA256SUMS` (the `sha256sum`
format, so `sha256sum -c SHA256SUMS` works by hand too). A bundle with a missing, changed or
extra file, or without the list, fails verification and is never served.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from uniret.registry.errors import RegistryError
from uniret.registry.layout import BUNDLES, MANIFEST, POINTER
from uniret.utils.files import atomic_write_text, sha256_file

SUMS = "SHA256SUMS"


def is_version_name(version: Any) -> bool:
    """A string usable as one folder under bundles/ (publish's rule: no '/', no leading '.')."""
    return isinstance(version, str) and bool(version) and "/" not in version and not version.startswith(".")


class IntegrityError(RegistryError):
    """A bundle does not match the checksums recorded when it was published."""


def _files(bundle: Path) -> list[str]:
    return sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file() and p.name != SUMS)


def write_checksums(bundle: str | Path) -> Path:
    """Record the sha256 of every file of `bundle` in its SHA256SUMS (call when publishing)."""
    bundle = Path(bundle)
    lines = [f"{sha256_file(bundle / rel)}  {rel}\n" for rel in _files(bundle)]
    return atomic_write_text(bundle / SUMS, "".join(lines))


def read_checksums(bundle: Path) -> dict[str, str]:
    """{relative path: sha256} recorded for `bundle`; IntegrityError when absent or malformed."""
    path = bundle / SUMS
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise IntegrityError(f"{bundle.name}: no checksums recorded ({SUMS} missing): not a verified bundle") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise IntegrityError(f"{bundle.name}: {SUMS} unreadable: {type(exc).__name__}") from exc
    if text and not text.endswith("\n"):  # write_checksums ends every line: the file was cut short
        raise IntegrityError(f"{bundle.name}: {SUMS} truncated (its last line has no end): not a verified bundle")
    sums: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64 or not rel or rel.startswith("/") or ".." in Path(rel).parts:
            raise IntegrityError(f"{bundle.name}: {SUMS}:{lineno}: malformed line")
        sums[rel] = digest
    return sums


def verify_bundle(bundle: str | Path) -> int:
    """Check every file of `bundle` against its recorded checksums; returns the number of files.

    IntegrityError names the bundle and the first few files that are missing, changed or unlisted.
    """
    bundle = Path(bundle)
    sums = read_checksums(bundle)
    present = set(_files(bundle))
    missing = sorted(set(sums) - present)
    extra = sorted(present - set(sums))
    changed = sorted(rel for rel in set(sums) & present if sha256_file(bundle / rel) != sums[rel])
    problems = [f"{what}: {', '.join(names[:5])}{' ...' if len(names) > 5 else ''}"
                for what, names in (("missing", missing), ("changed", changed),
                                       (f"not recorded in {SUMS} (a file added, or {SUMS} cut short)", extra))
                if names]
    if problems:
        raise IntegrityError(f"{bundle.name}: failed verification ({'; '.join(problems)})")
    return len(sums)


def verify_published(bundle: str | Path) -> int:
    """`verify_bundle`, and for a bundle published in a registry its manifest's version must be its
    folder's name: a bundle copied under another version (or its manifest edited) would otherwise pass
    and serve under the wrong name (/readyz reports the manifest's version)."""
    bundle = Path(bundle)
    files = verify_bundle(bundle)
    try:
        manifest = json.loads((bundle / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return files  # a bundle without a readable manifest fails where it is loaded, with its reason
    named = manifest.get("version") if isinstance(manifest, dict) else None
    if named is not None and named != bundle.name:
        raise IntegrityError(f"{bundle.name}: failed verification (its manifest.json names version {named!r}, "
                             f"not its folder's {bundle.name!r}: copied or edited by hand)")
    return files


def entry_problem(entry: Any, status: Callable[[str], str | None]) -> str | None:
    """What is wrong with one pointer entry (production or a history entry), or None.

    `status(version)` is the bundle's verification status ("ok ..." or the failure), None when
    no such bundle is published.
    """
    version = entry.get("version") if isinstance(entry, dict) else None
    found = status(version) if is_version_name(version) else None
    if found is None:
        return f"names {version!r}, which is not a published bundle"
    if entry.get("bundle") != f"{BUNDLES}/{version}":
        return f"entry {version!r} points at {entry.get('bundle')!r}, not {BUNDLES}/{version}"
    if not found.startswith("ok"):
        return f"names {version!r}, which fails verification"
    return None


VERIFY_HINT = "`uniret registry verify` lists every problem"


def require_sound_entries(root: str | Path, entries: Sequence[Any], action: str, hint: str = VERIFY_HINT,
                          verified: Iterable[str] = ()) -> None:
    """Before a registry change: RegistryError unless every pointer entry in `entries` names a
    published bundle that passes verification, checked as `uniret registry verify` checks them.

    Only the named bundles are hashed (`verified`: versions already checked under the same lock).
    The message names every problem and `hint` (what to do); nothing has been changed when it is raised.
    """
    root, done, failed = Path(root), set(verified), {}

    def status(version: str) -> str | None:
        path = root / BUNDLES / version
        if not path.is_dir():
            return None
        if version in done:
            return "ok"
        try:
            verify_published(path)
        except IntegrityError as exc:
            failed[version] = str(exc)
            return f"FAILED: {exc}"
        done.add(version)
        return "ok"

    problems = [p for p in (entry_problem(e, status) for e in entries) if p] + list(failed.values())
    if problems:
        raise RegistryError(f"{root / POINTER}: refusing to {action}: {'; '.join(problems)}; nothing was changed ({hint})")


def verified_bundle(bundle: str | Path, registry: str | Path | None, action: str) -> Path:
    """`bundle`, verified against its checksums when it has them or lies in `registry`'s bundles/:
    what every command that publishes or measures a bundle calls first (export, bench, evaluate
    --bundle), as serving and rollback do. IntegrityError names the bundle, its bad files and
    `action` ("not exported") when it fails; a bundle without checksums outside a registry (the index
    stage's own output) is taken as it is."""
    bundle = Path(bundle)
    in_registry = registry is not None and bundle.resolve().parent == (Path(registry) / "bundles").resolve()
    if (bundle / SUMS).is_file() or in_registry:
        try:
            verify_published(bundle) if in_registry else verify_bundle(bundle)
        except IntegrityError as exc:
            raise IntegrityError(f"{bundle}: bundle {exc}; {action}") from exc
    return bundle
