"""Checksums of published bundles: recorded at promotion, verified before serving and rollback.

Every file of a bundle is listed with its sha256 in `<bundle>/SHA256SUMS` (the `sha256sum`
format, so `sha256sum -c SHA256SUMS` works by hand too). A bundle with a missing, changed or
extra file, or without the list, fails verification and is never served.
"""

from __future__ import annotations

from pathlib import Path

from uniret.registry.errors import RegistryError
from uniret.utils.files import atomic_write_text, sha256_file

SUMS = "SHA256SUMS"


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
                for what, names in (("missing", missing), ("changed", changed), ("not recorded", extra)) if names]
    if problems:
        raise IntegrityError(f"{bundle.name}: failed verification ({'; '.join(problems)})")
    return len(sums)
