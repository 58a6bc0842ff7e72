"""The exported query/document ONNX graphs as an encoder (onnxruntime, no torch): how bundles encode.

uniret.export.onnx writes the graphs; this module reads them, so retrieval and serving load a
bundle without importing the exporter.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort

from uniret.core.errors import reading
from uniret.retrieval.encoding import EncodedTexts, encode_in_batches, to_csr

INPUTS = ("input_ids", "attention_mask")
QUERY_FILE = "query.onnx"
QUERY_INT8_FILE = "query.int8.onnx"  # int8 dynamic quantisation of query.onnx, when parity held
DOC_FILE = "doc.onnx"
DOC_INT8_FILE = "doc.int8.onnx"  # int8 document graph for corpus passes, when its parity bounds held


def inference_session(path: Path, threads: int | None = None, memory_pattern: bool = True, cpu_arena: bool = True
                      ) -> ort.InferenceSession:
    """An ONNX Runtime session of `path` (CUDA where onnxruntime has it, else the CPU); `memory_pattern`
    False for graphs fed many input shapes; `cpu_arena` False only to measure it (off, corpus passes
    run a third slower: E26)."""
    opts = ort.SessionOptions()
    opts.enable_cpu_mem_arena = cpu_arena
    opts.log_severity_level = 3  # warnings about unused initialisers etc. are noise here
    if threads:
        opts.intra_op_num_threads = threads
    # ONNX Runtime plans one memory block per input shape and keeps it in its CPU arena; a corpus pass
    # feeds a new padded length almost every batch, so documents go without the pattern (why: E26)
    opts.enable_mem_pattern = memory_pattern
    # No busy-waiting between ops: spinning intra-op threads fight concurrent requests and other
    # processes for the cores (batch-1 queries on a busy 2-core box: p50 16.6 -> 7.9 ms).
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    providers = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in ort.get_available_providers()]
    return ort.InferenceSession(str(path), sess_options=opts, providers=providers)


class OnnxEncoder:
    """The exported query/document graphs plus the tokenizer: same encode API as the torch model."""

    def __init__(self, onnx_dir: str | Path, tokenizer, batch_size: int, query_max_length: int, doc_max_length: int,
                 threads: int | None = None, query_file: str | None = None, doc_file: str | None = None,
                 lazy: bool = False):
        """`lazy`: create the query session on first use too (a bundle whose served mode runs no
        transformer on the query never loads the query graph)."""
        onnx_dir = Path(onnx_dir)
        for name in (QUERY_FILE, DOC_FILE):
            if not (onnx_dir / name).is_file():
                raise FileNotFoundError(f"{onnx_dir / name}: ONNX encoder not found")
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.max_length = {True: query_max_length, False: doc_max_length}
        # the int8 query graph ships only when it passed its parity check (uniret.export.quantize)
        query = query_file or (QUERY_INT8_FILE if (onnx_dir / QUERY_INT8_FILE).is_file() else QUERY_FILE)
        doc = doc_file or (DOC_INT8_FILE if (onnx_dir / DOC_INT8_FILE).is_file() else DOC_FILE)
        self.query_file, self.doc_file = query, doc
        self.paths = {True: onnx_dir / query, False: onnx_dir / doc}
        self.threads = threads
        self._sessions: dict[bool, ort.InferenceSession] = {}
        self._lock = threading.Lock()
        if not lazy:
            self.session(True)  # the query graph is needed at once; the document graph on first use

    def session(self, is_query: bool) -> ort.InferenceSession:
        """The query or document session, created on first use (serving never loads the doc graph)."""
        found = self._sessions.get(is_query)
        if found is None:
            with self._lock:
                found = self._sessions.get(is_query)
                if found is None:
                    # queries (<= query_max_length shapes, batch 1 in serving) keep the pattern
                    with reading(self.paths[is_query], "ONNX model"):
                        found = self._sessions[is_query] = inference_session(self.paths[is_query], self.threads,
                                                                             memory_pattern=is_query)
        return found

    def with_batch_size(self, batch_size: int) -> OnnxEncoder:
        """This encoder at another batch size, sharing its sessions (e.g. a corpus pass's batches
        beside serving's query batches)."""
        other = copy.copy(self)
        other.batch_size = batch_size
        return other

    def outputs(self, is_query: bool) -> list[str]:
        """Output names of the query or document graph."""
        return [o.name for o in self.session(is_query).get_outputs()]

    def _encode_batch(self, texts: Sequence[str], is_query: bool, max_length: int) -> EncodedTexts:
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="np")
        feeds = {name: enc[name].astype(np.int64) for name in INPUTS}
        session = self.session(is_query)
        values = dict(zip(self.outputs(is_query), session.run(None, feeds), strict=True))
        return EncodedTexts(
            dense=values["dense"].astype(np.float32) if "dense" in values else None,
            sparse=to_csr(values["sparse"]) if "sparse" in values else None,
            gate=values["gate"].reshape(-1).astype(np.float32) if "gate" in values else None,
        )

    def encode(self, texts: Sequence[str], is_query: bool) -> EncodedTexts:
        """Encode `texts` as queries or documents, in batches."""
        max_length = self.max_length[is_query]
        desc = "onnx encode " + ("queries" if is_query else "docs")
        return encode_in_batches(lambda b: self._encode_batch(b, is_query, max_length), texts, self.batch_size, desc)

    def encode_texts(self, texts: Sequence[str], is_query: bool, batch_size: int, max_length: int):
        """(dense ndarray | None, sparse CSR | None), like uniret.models.encode.encode_texts."""
        out = encode_in_batches(lambda b: self._encode_batch(b, is_query, max_length), texts, batch_size,
                                "onnx encode " + ("queries" if is_query else "docs"))
        return out.dense, out.sparse
