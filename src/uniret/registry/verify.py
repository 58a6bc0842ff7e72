"""`uniret registry verify`: every published bundle against its checksums, and the production pointer.

Its own module because it reads both the checksums (integrity) and the pointer (pointer), and the
pointer verifies a bundle before it flips to it: here neither of those two imports the other's reader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from uniret.registry.errors import RegistryError
from uniret.registry.integrity import IntegrityError, entry_problem, verify_published
from uniret.registry.pointer import BUNDLES, read_pointer


@dataclass
class RegistryReport:
    """Outcome of `uniret registry verify`: one line per bundle, and the pointer's problems."""

    bundles: dict[str, str] = field(default_factory=dict)  # version -> "ok (N files)" or the failure
    pointer: list[str] = field(default_factory=list)  # problems of production.json

    @property
    def ok(self) -> bool:
        return not self.pointer and all(v.startswith("ok") for v in self.bundles.values())

    def lines(self) -> list[str]:
        out = [f"{version}: {status}" for version, status in self.bundles.items()]
        out += [f"production.json: {p}" for p in self.pointer] or ["production.json: ok"]
        out.append("registry: ok" if self.ok else "registry: FAILED verification")
        return out


def verify_registry(root: str | Path) -> RegistryReport:
    """Verify every published bundle and the production pointer (it and its history must name
    published bundles that pass verification)."""
    root = Path(root)
    report = RegistryReport()
    bundles = root / BUNDLES
    for path in sorted(bundles.iterdir()) if bundles.is_dir() else []:
        if path.name.startswith(".") or not path.is_dir():
            continue
        try:
            report.bundles[path.name] = f"ok ({verify_published(path)} files)"
        except IntegrityError as exc:
            report.bundles[path.name] = f"FAILED: {exc}"
    try:
        pointer = read_pointer(root)
    except RegistryError as exc:
        report.pointer.append(str(exc))
        return report
    entries = [pointer, *pointer["history"]] if pointer else []
    report.pointer += [p for p in (entry_problem(e, report.bundles.get) for e in entries) if p]
    return report
