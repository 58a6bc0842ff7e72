"""The exact top-k of one query over flat float32 vectors, reading int8 codes instead of every float (E93).

A one-query scan of a flat index reads every vector: at 5k x 384 float32 (8 MB, past the L2 cache) it
runs at memory speed, about 0.3 ms. Here the vectors are also held as int8 codes (a scale per
dimension, a quarter of the bytes), scanned by ONNX Runtime's integer matrix product (u8 x s8 -> s32,
the query quantised per call). Each code score comes with a bound on its distance from the float score:

    |code score - float score| <= |delta| |C_d| + |q| |r_d| + slack

(delta: the query's own rounding; C_d: the document's codes; r_d: its rounding residual, both norms
kept per document; slack: the float32 product's round-off). Every document whose upper bound reaches
the k-th best lower bound is rescored from its float32 vector, so the result is the float scan's top k
(ties by the lower row) up to the round-off of two float32 summation orders; when the bounds keep too
many candidates the float scan runs instead.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

# from this many vectors the one-query scan leaves the L2 cache and codes pay (E93); below, the float
# scan costs tens of microseconds
MIN_DOCS = 4096
# above this many the codes' copy (n x dim bytes, twice: ONNX Runtime packs its own) is not made:
# large corpora are shortlisted by IVF (retrieval.pruning) or searched by an engine
MAX_DOCS = 200_000
# rescoring more than this share of the corpus costs what the float scan does: run that instead
MAX_CANDIDATE_SHARE = 0.25
# |float32 product - exact product| <= n * 2^-24 * |q| |v| (n = dim); 1e-4 per unit covers dim <= 1,600
ROUNDING_SLACK = 1e-4
ZERO_POINT = 128  # the query's codes are unsigned: q + 128 in 1..255


class Int8Scan:
    """int8 codes of `vectors` [n, dim] float32 and the per-document bounds of their error."""

    def __init__(self, vectors: np.ndarray):
        import onnxruntime as ort

        v = np.asarray(vectors, dtype=np.float64)
        peak = np.abs(v).max(axis=0)
        self.scales = np.where(peak > 0, peak / 127.0, 1.0)
        codes = np.clip(np.rint(v / self.scales), -127, 127)
        self.residual = np.linalg.norm(v - codes * self.scales, axis=1)
        self.code_norm = np.linalg.norm(codes, axis=1)
        self.vector_norm = np.linalg.norm(v, axis=1)
        self.n = len(v)  # the vectors themselves are not held: the cache below keys on their life
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # one query per call; requests already run side by side
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        model = _product_model(np.ascontiguousarray(codes.T.astype(np.int8)))
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

    def top_k(self, vectors: np.ndarray, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(rows, float32 scores) of the k best of `vectors` (the array the codes were made from) for one
        float32 `query`, best first, ties by the lower row; None when the bounds leave too many
        candidates (the caller scans the floats)."""
        n = self.n
        q = np.asarray(query, dtype=np.float64)
        scaled = q * self.scales
        step = float(np.abs(scaled).max()) / 127.0
        if step == 0.0 or k >= n:
            return None
        levels = np.rint(scaled / step)
        (products,) = self.session.run(None, {"A": (levels + ZERO_POINT).astype(np.uint8).reshape(1, -1)})
        approx = products[0] * step
        q_norm = float(np.linalg.norm(q))
        bound = (float(np.linalg.norm(levels * step - scaled)) * self.code_norm + q_norm * self.residual
                 + ROUNDING_SLACK * q_norm * self.vector_norm)
        floor = np.partition(approx - bound, n - k)[n - k]  # the k-th best lower bound
        candidates = np.flatnonzero(approx + bound >= floor)
        if len(candidates) > MAX_CANDIDATE_SHARE * n:
            return None
        exact = vectors[candidates] @ np.asarray(query, dtype=np.float32)
        order = np.lexsort((candidates, -exact))[:k]
        return candidates[order], exact[order]


def _product_model(codes_t: np.ndarray) -> bytes:
    """An ONNX graph: A [1, dim] uint8 (zero point 128) times the codes [dim, n] int8 -> [1, n] int32."""
    from onnx import TensorProto, helper, numpy_helper

    dim, n = codes_t.shape
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "codes", "zero"], ["products"])], "int8_scan",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, [1, dim])],
        [helper.make_tensor_value_info("products", TensorProto.INT32, [1, n])],
        [numpy_helper.from_array(codes_t, "codes"), numpy_helper.from_array(np.array(ZERO_POINT, dtype=np.uint8), "zero")])
    # IR 8 / opset 13: what every onnxruntime this project pins reads
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8).SerializeToString()


_SCANS: dict[int, tuple[weakref.ref, Int8Scan]] = {}
_LOCK = threading.Lock()


def scan_for(vectors: np.ndarray) -> Int8Scan | None:
    """The shared Int8Scan of this vectors array (made on first use, once however many searchers read
    it), or None outside [MIN_DOCS, MAX_DOCS]."""
    if not MIN_DOCS <= len(vectors) <= MAX_DOCS:
        return None
    with _LOCK:
        held = _SCANS.get(id(vectors))
        if held is not None and held[0]() is vectors:
            return held[1]
        scan = Int8Scan(vectors)
        _SCANS[id(vectors)] = (weakref.ref(vectors, lambda _, key=id(vectors): _SCANS.pop(key, None)), scan)
        return scan
