"""Corpus encoding split into N shards, encoded in parallel and merged back in corpus order.

The shards are cut from the exact batches a one-process pass forms: texts sorted longest first
(`encoding.length_order`), cut into batches of `batch_size`, batch i going to shard i mod N (so
every shard gets long and short texts alike). Each shard encodes its batches unchanged, so the
merged result equals the unsharded encoding up to the run-to-run noise of the kernels.

- Locally, `encode_sharded` runs the shards in N worker processes (spawned: torch and
  onnxruntime do not survive fork) and merges them.
- On a cluster, a kfp `dsl.ParallelFor` over range(N) calls `encode_corpus_shard` once per shard
  (it reads the corpus file itself and writes one shard folder), and the next task calls
  `merge_shard_dirs` on the N folders.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import shutil
import tempfile
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from uniret.retrieval.encoding import (
    EncodedTexts,
    TextEncoder,
    batches,
    concat_encoded,
    length_order,
    load_encoded,
    save_encoded,
    scatter_rows,
)
from uniret.utils.files import atomic_dir

log = logging.getLogger("uniret.retrieval")

SHARD_META = "shard.json"


@dataclass(frozen=True)
class EncoderSpec:
    """What a worker process needs to rebuild the encoder (picklable: paths and sizes only).

    kind "onnx": `path` is a bundle's onnx/ folder and `tokenizer` its tokenizer/ folder;
    kind "torch": `path` is a models.factory checkpoint folder (it holds its tokenizer).
    """

    kind: Literal["onnx", "torch"]
    path: str
    batch_size: int
    query_max_length: int
    doc_max_length: int
    tokenizer: str = ""
    amp: str = "off"  # kind "torch": TorchTextEncoder's autocast setting

    def build(self, threads: int | None = None) -> TextEncoder:
        """The encoder, on the CPU, with `threads` intra-op threads (None: the library default)."""
        if self.kind == "onnx":
            from uniret.models.backbones import load_tokenizer
            from uniret.retrieval.onnx_encoder import OnnxEncoder

            return OnnxEncoder(self.path, load_tokenizer(self.tokenizer), self.batch_size, self.query_max_length,
                               self.doc_max_length, threads=threads)
        import torch

        from uniret.models.factory import load_model
        from uniret.retrieval.encoding import TorchTextEncoder

        if threads:
            torch.set_num_threads(threads)
        model, tokenizer = load_model(self.path)
        return TorchTextEncoder(model, tokenizer, self.batch_size, self.query_max_length, self.doc_max_length,
                                amp=self.amp)


def shard_plan(texts: Sequence[str], batch_size: int, num_shards: int) -> list[list[int]]:
    """Row indices of each shard, in the order that shard encodes them (see module doc)."""
    if num_shards < 1 or batch_size < 1:
        raise ValueError(f"need num_shards >= 1 and batch_size >= 1, got {num_shards} and {batch_size}")
    chunks = batches(length_order(texts), batch_size)
    return [[i for chunk in chunks[k::num_shards] for i in chunk] for k in range(num_shards)]


def _write_shard(folder: Path, rows: list[int], doc_ids: Sequence[str], encoded: EncodedTexts, shard: int,
                 num_shards: int) -> Path:
    """One shard folder, written aside and renamed into place."""
    with atomic_dir(folder) as tmp:
        save_encoded(tmp, encoded)
        meta = {"shard": shard, "num_shards": num_shards, "rows": rows, "doc_ids": [doc_ids[i] for i in rows]}
        (tmp / SHARD_META).write_text(json.dumps(meta), encoding="utf-8")
    return folder


def encode_shard(spec: EncoderSpec, texts: Sequence[str], doc_ids: Sequence[str], shard: int, num_shards: int,
                 out_dir: str | os.PathLike, threads: int | None = None) -> Path:
    """Encode shard `shard` of `num_shards` of the documents `texts` into `out_dir` (a shard folder)."""
    if not 0 <= shard < num_shards:
        raise ValueError(f"shard {shard} is not in 0..{num_shards - 1}")
    if len(texts) != len(doc_ids):
        raise ValueError(f"{len(texts)} texts but {len(doc_ids)} doc ids")
    rows = shard_plan(texts, spec.batch_size, num_shards)[shard]
    encoder = spec.build(threads)
    encoded = encoder.encode([texts[i] for i in rows], is_query=False) if rows else EncodedTexts()
    log.info("shard %d/%d: %d documents encoded", shard, num_shards, len(rows))
    return _write_shard(Path(out_dir), rows, doc_ids, encoded, shard, num_shards)


def encode_corpus_shard(spec: EncoderSpec, corpus_dir: str | os.PathLike, shard: int, num_shards: int,
                        out_dir: str | os.PathLike, threads: int | None = None) -> Path:
    """What one kfp ParallelFor task calls: read a BEIR corpus folder, encode shard `shard` into out_dir."""
    from uniret.data.beir import BeirDataset

    docs = list(BeirDataset(Path(corpus_dir)).iter_corpus())
    return encode_shard(spec, [d.contents for d in docs], [d.id for d in docs], shard, num_shards, out_dir, threads)


def _read_shard(folder: Path) -> tuple[dict, EncodedTexts]:
    meta_path = folder / SHARD_META
    if not meta_path.is_file():
        raise FileNotFoundError(f"{meta_path}: not an encoded shard (missing {SHARD_META})")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    encoded = load_encoded(folder)
    if meta["rows"] and len(encoded) != len(meta["rows"]):
        raise ValueError(f"{folder}: {len(encoded)} encoded rows but {len(meta['rows'])} listed in {SHARD_META}")
    return meta, encoded


def merge_shard_dirs(folders: Sequence[str | os.PathLike], doc_ids: Sequence[str]) -> EncodedTexts:
    """The shards' encodings as one EncodedTexts in the order of `doc_ids` (every id exactly once)."""
    position = {d: i for i, d in enumerate(doc_ids)}
    if len(position) != len(doc_ids):
        raise ValueError("doc ids are not unique")
    metas, parts, counts = [], [], set()
    for folder in folders:
        meta, encoded = _read_shard(Path(folder))
        counts.add(meta["num_shards"])
        if meta["rows"]:
            metas.append(meta)
            parts.append(encoded)
    if len(counts) > 1 or (counts and len(folders) != counts.pop()):
        raise ValueError(f"shard folders {list(map(str, folders))} are not one complete set of shards")
    rows = [position.get(d, -1) for meta in metas for d in meta["doc_ids"]]
    if -1 in rows or sorted(rows) != list(range(len(doc_ids))):
        raise ValueError("the shards do not cover the documents exactly once (another corpus or a missing shard)")
    return scatter_rows(concat_encoded(parts), rows)


def default_threads(num_shards: int) -> int:
    """Cores per worker when `num_shards` workers share this machine."""
    return max(1, (os.cpu_count() or 1) // num_shards)


def encode_sharded(spec: EncoderSpec, texts: Sequence[str], doc_ids: Sequence[str], num_shards: int,
                   threads: int | None = None, work_dir: str | os.PathLike | None = None) -> EncodedTexts:
    """Encode documents in `num_shards` parallel worker processes and merge them (module doc)."""
    threads = threads or default_threads(num_shards)
    plan = shard_plan(texts, spec.batch_size, num_shards)
    tmp = Path(tempfile.mkdtemp(prefix=".shards-", dir=work_dir))
    try:
        folders = [tmp / f"shard-{k:04d}" for k in range(num_shards)]
        with ProcessPoolExecutor(num_shards, mp_context=multiprocessing.get_context("spawn")) as pool:
            # each worker gets only its shard's texts (in plan order), so it re-plans a single shard
            jobs = [pool.submit(_encode_rows, spec, [texts[i] for i in rows], [doc_ids[i] for i in rows], folders[k],
                                k, num_shards, threads) for k, rows in enumerate(plan)]
            for job in jobs:
                job.result()
        return merge_shard_dirs(folders, doc_ids)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _encode_rows(spec: EncoderSpec, texts: list[str], doc_ids: list[str], folder: Path, shard: int,
                 num_shards: int, threads: int) -> Path:
    """Worker: encode one shard's texts (already in the shard's batch order) into `folder`."""
    encoder = spec.build(threads)
    encoded = encoder.encode(texts, is_query=False) if texts else EncodedTexts()
    return _write_shard(folder, list(range(len(texts))), doc_ids, encoded, shard, num_shards)


def encode_corpus(encoder: TextEncoder, spec: EncoderSpec | None, texts: Sequence[str], doc_ids: Sequence[str],
                  shards: int, threads: int | None = None, work_dir: str | os.PathLike | None = None) -> EncodedTexts:
    """Documents encoded by `shards` worker processes when shards > 1 and `spec` can rebuild the
    encoder in them, else by `encoder` in this process (a corpus pass of index, mine or evaluate)."""
    if shards > 1 and spec is not None:
        return encode_sharded(spec, texts, doc_ids, shards, threads, work_dir)
    return encoder.encode(list(texts), is_query=False)
