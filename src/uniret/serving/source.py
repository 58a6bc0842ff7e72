"""Where the served bundle comes from: a registry's production pointer, or a fixed bundle folder.

It also builds the searcher set of a bundle folder (the state's loader) with serving's thread
settings, and names a bundle's version (the registry's version, else folder name + manifest hash).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from uniret.config.modes import QUERY_FREE_MODES
from uniret.retrieval.base import Searcher
from uniret.utils.text import excerpt

MANIFEST = "manifest.json"
HASH_CHARS = 8


class SourceError(RuntimeError):
    """The bundle to load cannot be determined (no production pointer, version mismatch, ...)."""


POINTER_NAME = "production.json"  # uniret.registry.layout.POINTER, as an admin reply names it


def _refused(requested: object) -> SourceError:
    # one text for every refusal (outside the registry, unpublished, absent): it must not tell a
    # caller whether some path exists on the server
    return SourceError(
        f"bundle {excerpt(requested)} refused: not a published bundle of this server's registry "
        "(give bundles/<version>, or no bundle to load production)"
    )


def published_path(registry_root: Path, value: str) -> Path:
    """`value` (relative to the registry root, or absolute) as a published bundle folder.

    The path is resolved (symlinks, `..`) and must be exactly <registry>/bundles/<version> with a
    version that is not a temp folder and that exists; anything else is refused with one message.
    """
    from uniret.registry.pointer import BUNDLES

    try:
        given = Path(value).expanduser()
        path = (given if given.is_absolute() else registry_root / given).resolve()
        bundles = (registry_root / BUNDLES).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise _refused(value) from exc
    if path.parent != bundles or path.name.startswith(".") or not path.is_dir():
        raise _refused(value)
    return path


def bundle_version(path: Path) -> str:
    """The registry version in the bundle's manifest, else `<folder>-<manifest sha256 prefix>`."""
    manifest = Path(path) / MANIFEST
    try:
        raw = manifest.read_bytes()
        data = json.loads(raw)
    except (OSError, ValueError) as exc:
        raise SourceError(f"{manifest}: cannot read bundle manifest: {exc}") from exc
    if isinstance(data, dict) and isinstance(data.get("version"), str):
        return data["version"]
    return f"{Path(path).name}-{hashlib.sha256(raw).hexdigest()[:HASH_CHARS]}"


@dataclass
class BundleSource:
    """A registry root (production.json decides) or a fixed bundle folder (reloads reopen it)."""

    registry_root: Path | None = None
    bundle: Path | None = None

    def __post_init__(self) -> None:
        if self.registry_root is None and self.bundle is None:
            raise ValueError("serving needs a registry root or a bundle folder")

    def production(self) -> tuple[Path, str] | None:
        """(bundle folder, version) named by production.json; None when nothing was promoted."""
        from uniret.registry.errors import RegistryError
        from uniret.registry.pointer import read_pointer

        try:
            pointer = read_pointer(self.registry_root)
        except RegistryError as exc:
            raise SourceError(str(exc)) from exc
        if pointer is None:
            return None
        if not isinstance(pointer.get("bundle"), str):
            raise SourceError(f"{self.registry_root / 'production.json'}: field 'bundle' missing or not a string")
        try:
            return published_path(self.registry_root, pointer["bundle"]), pointer["version"]
        except SourceError as exc:
            raise SourceError(f"production.json: {exc}") from exc

    def resolve(self, requested: str | None = None, expected_version: str | None = None) -> tuple[Path, str]:
        """(bundle folder, version) to load: `requested` when given, else the pointer or the fixed folder."""
        path, version, what = self._resolve(requested)
        if expected_version and expected_version != version:  # the caller's word on what it expects to load
            raise SourceError(f"{what} is version {version!r}, the reload asked for {expected_version!r}")
        return path, version

    def _resolve(self, requested: str | None) -> tuple[Path, str, str]:
        if requested:
            if self.registry_root is None:
                # a fixed-bundle server reopens its own folder only
                fixed = self.bundle.resolve()
                path = Path(requested).expanduser()
                if (path if path.is_absolute() else Path.cwd() / path).resolve() != fixed:
                    raise _refused(requested)
                return fixed, bundle_version(fixed), "the served folder"
            path = published_path(self.registry_root, requested)
            return path, bundle_version(path), "the requested bundle"
        if self.registry_root is not None:
            found = self.production()
            if found is None:
                raise SourceError(f"{POINTER_NAME}: no production bundle promoted yet")
            return found[0], found[1], f"the bundle {POINTER_NAME} names"
        return self.bundle, bundle_version(self.bundle), "the served folder"

    def relative_text(self, text: str) -> str:
        """`text` with the server's registry (or bundle) folder left out: an admin reply names paths
        relative to the registry, never where the server keeps it."""
        base = self.registry_root if self.registry_root is not None else self.bundle.parent
        for root in {str(base.resolve()), str(base)}:
            text = text.replace(root.rstrip("/") + "/", "")
        return text

    def display(self, path: Path) -> str:
        """How /readyz and /metrics name a bundle folder: relative to the registry, never absolute."""
        if self.registry_root is not None:
            try:
                return Path(path).resolve().relative_to(self.registry_root.resolve()).as_posix()
            except ValueError:
                pass
        return Path(path).name

    def verified_loader(self, loader):
        """`loader` preceded by the check of the bundle's recorded checksums: always for a registry
        source, and for a served folder that has them (the index stage records them)."""
        def load(path: Path):
            from uniret.registry.integrity import SUMS, verify_bundle, verify_published

            if self.registry_root is not None:
                verify_published(path)  # IntegrityError: the state reports it and keeps the old bundle
            elif (Path(path) / SUMS).is_file():
                verify_bundle(path)
            return loader(path)

        return load

    def describe(self) -> str:
        return f"registry {self.registry_root}" if self.registry_root is not None else f"bundle {self.bundle}"


def offered_modes(modes: list[str], policy: str, default_mode: str | None, serve_mode: str | None) -> list[str]:
    """The bundle's modes a server offers under `serve.modes` (served: the default mode plus every
    mode with no transformer on the query; all: every one)."""
    if policy == "all":
        return list(modes)
    served = default_mode or serve_mode
    return [m for m in modes if m in QUERY_FREE_MODES or m == served]


def bundle_loader(onnx_threads: int | None, backend_cfg=None, batch_max: int = 1, batch_wait_ms: float = 0.0,
                  timeout_s: float | None = None, batch_workers: int = 1, modes: str = "all",
                  default_mode: str | None = None):
    """A loader for ServingState: {mode: Searcher} of a bundle folder (its own retrieval params;
    the lexical backend from `backend_cfg`, the serving process's retrieval params, when given).
    With `batch_max` > 1 the query encoder is micro-batched across concurrent requests; `modes`
    and `default_mode` pick the modes offered (`offered_modes`)."""

    def load(path: Path) -> dict[str, Searcher]:
        from uniret.retrieval.bundle import open_bundle
        from uniret.retrieval.modes import build_searchers
        from uniret.serving.batcher import BatchingQueryEncoder

        bundle = open_bundle(path, None, onnx_threads, backend_cfg)
        encoder = bundle.encoder
        if encoder is not None and batch_max > 1:
            encoder = BatchingQueryEncoder(encoder, batch_max, batch_wait_ms / 1000.0, timeout_s, batch_workers)
        wanted = offered_modes(bundle.retrieval.modes, modes, default_mode,
                               (bundle.manifest.get("model") or {}).get("serve_mode"))
        return build_searchers(bundle.index, bundle.retrieval, encoder, bundle.bm25, bundle.has_gate, wanted)

    return load
