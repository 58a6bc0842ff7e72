"""Corpus encodings cached per (model, corpus): an unchanged model is never re-encoding a corpus.

Encoding a corpus dominates the CPU cost of mining and evaluation (STACK.md: minutes per
thousand documents), so encodings are stored under <artifacts>/<cache_dir>/<key>/ where the key
hashes the model's identity (checkpoint contents, or the config of an untrained starting model,
plus the maximum lengths) and the corpus file's contents. The folder is written aside and
renamed into place, so a crash never leaves a half-written entry. The cache is not a DVC output:
`dvc repro` leaves it alone, and deleting it only costs time. Arrays that depend on the model alone
(the static tower's token vectors) sit beside the encodings, in <cache_dir>/model-arrays/.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from uniret.retrieval.encoding import EncodedTexts, load_encoded, save_encoded
from uniret.utils.files import atomic_open, hash_path, make_temp_dir, sha256_file

log = logging.getLogger("uniret.retrieval")

META = "meta.json"


def encoder_key(config: dict | None, weights: str, name: str = "") -> str:
    """Identity of an encoder from its config (a dict) and a hash of its weights.

    Shared by the torch model sources and the bundle source (which reads both from the bundle
    manifest), so one checkpoint's corpus encodings are computed once, by whichever runs first:
    the index stage checks that the ONNX graphs match the checkpoint (export parity).
    """
    described = json.dumps(config, sort_keys=True) if config is not None else name
    return hashlib.sha256(f"{described}|{weights}".encode()).hexdigest()[:24]


# The int8 document graph's form: encodings of an older form (v1: the vocabulary GEMM left in fp32)
# differ from today's in the last digits, so a cache entry of one is never read for the other.
INT8_DOC_FORM = "int8-docs-v2"


def int8_form(batch_size: int) -> str:
    """The int8 document graph's encoding form at `batch_size`. Its activations are quantised with one
    scale per batch (dynamic int8), so a document's encoding depends on its batch mates: encodings
    made at another batch size differ (NFCorpus at 32 vs 64: median cosine 0.996) and are another entry."""
    return f"{INT8_DOC_FORM}|batch{batch_size}"


def checkpoint_key(config: dict, checkpoint_sha256: str, int8_batch_size: int | None = None) -> str:
    """Cache identity of a checkpoint's corpus encodings: the torch model's and its fp32 ONNX graph's
    are the same (export parity); an int8 document graph's (`int8_batch_size`: the batch size it
    encodes at) are not, so they get their own key."""
    if int8_batch_size is None:
        return encoder_key(config, checkpoint_sha256)
    return encoder_key(config, f"{checkpoint_sha256}|{int8_form(int8_batch_size)}")


def model_key(model, checkpoint: Path | None = None) -> str:
    """Identity of an encoder: its checkpoint folder's contents, else its config (a pretrained start)."""
    cfg = getattr(model, "model_config", None)
    config = dataclasses.asdict(cfg) if cfg is not None else None
    weights = hash_path(checkpoint) if checkpoint is not None else "pretrained"
    return encoder_key(config, weights, type(model).__name__)


def cache_entry(root: Path, model_id: str, corpus_path: Path) -> Path:
    """The cache folder of (model, corpus)."""
    corpus = sha256_file(corpus_path)
    return Path(root) / hashlib.sha256(f"{model_id}|{corpus}".encode()).hexdigest()[:24]


def _save(folder: Path, model_id: str, corpus_path: Path, docids: list[str], encoded: EncodedTexts,
          label: str) -> None:
    """Write one cache entry aside and rename it into place; an existing entry is kept."""
    if (folder / META).is_file():
        return
    meta = {"model": model_id, "corpus": str(corpus_path), "label": label, "num_docs": len(docids)}
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(folder.parent, f".{folder.name}.")
    try:
        save_encoded(tmp, encoded)
        (tmp / "docids.json").write_text(json.dumps(list(docids)), encoding="utf-8")
        (tmp / META).write_text(json.dumps(meta, indent=2), encoding="utf-8")
        if folder.exists():  # a concurrent writer won: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
            return
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _load(folder: Path) -> tuple[list[str], EncodedTexts]:
    docids = json.loads((folder / "docids.json").read_text(encoding="utf-8"))
    encoded = load_encoded(folder)
    return docids, EncodedTexts(dense=encoded.dense, sparse=encoded.sparse)


def store_corpus_encoding(
    root: Path, model_id: str, corpus_path: Path, docids: list[str], encoded: EncodedTexts, label: str = ""
) -> None:
    """Put encodings computed elsewhere (the index stage's) into the cache, unless an entry exists."""
    _save(cache_entry(root, model_id, corpus_path), model_id, corpus_path, docids, encoded, label)


def cached_corpus_encoding(
    root: Path,
    model_id: str,
    corpus_path: Path,
    docids: list[str],
    encode: Callable[[], EncodedTexts],
    label: str = "",
) -> EncodedTexts:
    """The encodings of `docids` (in that order): from the cache, else `encode()` and store them."""
    folder = cache_entry(root, model_id, corpus_path)
    if (folder / META).is_file():
        cached_ids, encoded = _load(folder)
        if cached_ids == list(docids):
            log.info("corpus encodings of %s from cache %s", label or corpus_path, folder)
            return encoded
        log.warning("cache %s holds another document order; re-encoding", folder)
        shutil.rmtree(folder, ignore_errors=True)
    encoded = encode()
    _save(folder, model_id, corpus_path, docids, encoded, label)
    return encoded


def cached_model_array(root: Path, model_id: str, name: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """An array that depends on the model alone (the static tower's token vectors): from the cache
    (<root>/model-arrays/<key>.npy), else `compute()` and store it (written aside and renamed)."""
    path = Path(root) / "model-arrays" / f"{hashlib.sha256(f'{model_id}|{name}'.encode()).hexdigest()[:24]}.npy"
    if path.is_file():
        try:
            array = np.load(path, allow_pickle=False)
            log.info("%s from cache %s", name, path)
            return array
        except (OSError, ValueError, EOFError) as exc:  # a damaged entry costs a recomputation, never the stage
            log.warning("cache %s unreadable (%s); recomputing", path, exc)
    array = compute()
    with atomic_open(path, "wb") as fh:
        np.save(fh, array, allow_pickle=False)
    return array


def cached_text_vectors(root: Path, model_id: str, name: str, texts: Sequence[str],
                        compute: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """[len(texts), dim] vectors that depend on the model and the text alone (the static tower's teacher
    vectors): the texts already in the cache (<root>/model-arrays/<key>.npz) are read, the others computed
    by `compute(new texts)` and added. A nightly's distillation texts are mostly last night's: only the
    new logged queries are encoded."""
    path = Path(root) / "model-arrays" / f"{hashlib.sha256(f'{model_id}|{name}'.encode()).hexdigest()[:24]}.npz"
    known: dict[str, np.ndarray] = {}
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as z:
                known = dict(zip(z["texts"].tolist(), z["vectors"], strict=True))
        except (OSError, ValueError, EOFError, KeyError) as exc:  # a damaged entry costs a recomputation
            log.warning("cache %s unreadable (%s); recomputing", path, exc)
    missing = sorted(set(texts) - known.keys())
    if missing:
        known.update(zip(missing, compute(missing), strict=True))
        with atomic_open(path, "wb") as fh:
            np.savez(fh, texts=np.array(list(known)), vectors=np.stack(list(known.values())))
    log.info("%s: %d texts, %d from cache %s", name, len(texts), len(texts) - len(missing), path)
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack([known[t] for t in texts]).astype(np.float32)
