"""A torch model's ONNX twin for one long pass over texts, in a working folder (not shipped).

The mine stage encodes the training corpus with the warm-up model, which no bundle carries. On two
CPU cores onnxruntime runs that model's fp32 graphs about twice as fast as torch with the same
encodings (E105), so the stage exports them with the legacy exporter (about 2 s for the pair,
dynamo's takes 14), checks them against torch as the index stage checks a bundle's, and encodes
through them. A failed check costs nothing but the time: the caller keeps the torch encoder. The evaluate stage's
trained and zero-shot sources encode every evaluation corpus the same way (`LazyTwin`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path

from uniret.config.retrieval import ExportConfig
from uniret.core.errors import StageFailed
from uniret.export.onnx import export_encoders
from uniret.export.parity import check_parity
from uniret.retrieval.encoding import TorchTextEncoder
from uniret.retrieval.onnx_encoder import OnnxEncoder

log = logging.getLogger("uniret.export")

TOKENIZER_DIR = "tokenizer"  # beside the graphs: shard workers rebuild the encoder from the folder


def onnx_twin(encoder: TorchTextEncoder, folder: Path, queries: Sequence[str], docs: Sequence[str],
              cfg: ExportConfig) -> OnnxEncoder | None:
    """An OnnxEncoder of `encoder`'s model at its batch size and lengths, its graphs exported into
    `folder` and held to `cfg.parity` against `encoder` on `queries` and `docs`; None (logged) when
    the check fails or the model cannot be exported, so the caller encodes with torch."""
    model, tokenizer = encoder.model, encoder.tokenizer
    if encoder.device.type != "cpu":  # the exporter traces on the CPU, moving the model there in place
        log.info("no ONNX twin of %s: it runs on %s, which encodes in torch", type(model).__name__, encoder.device)
        return None
    qlen, dlen = encoder.max_length[True], encoder.max_length[False]
    try:
        export_encoders(model, tokenizer, folder, dataclasses.replace(cfg, dynamo=False), qlen, dlen)
        twin = OnnxEncoder(folder, tokenizer, encoder.batch_size, qlen, dlen)
        check_parity(encoder, twin, queries, docs, cfg.parity)
    except (StageFailed, RuntimeError) as err:  # torch.onnx raises RuntimeError subclasses
        log.warning("ONNX twin of %s not used, encoding with torch: %s", type(model).__name__, err)
        return None
    tokenizer.save_pretrained(str(folder / TOKENIZER_DIR))
    return twin


class LazyTwin:
    """A torch encoder whose corpus passes go to its ONNX twin, made (in `folder`) on the first pass
    that asks for it (a corpus the encoding cache holds asks for none); every text after that, queries
    included, goes through the twin. Other attributes are the current encoder's."""

    def __init__(self, encoder: TorchTextEncoder, folder: Path, cfg: ExportConfig):
        self.current: TorchTextEncoder | OnnxEncoder = encoder
        self.folder, self.cfg = folder, cfg
        self.made = False
        self._tried = False

    def corpus_encoder(self, queries: Sequence[str], docs: Sequence[str]) -> TorchTextEncoder | OnnxEncoder:
        """The encoder of a corpus pass: the twin, held to `cfg.parity` on the first of `queries` and
        `docs` when first asked for, else (its check failed) the torch encoder."""
        if not self._tried:
            self._tried = True
            parity = self.cfg.parity
            twin = onnx_twin(self.current, self.folder, list(queries)[:parity.queries], list(docs)[:parity.docs],
                             self.cfg)
            if twin is not None:
                self.current, self.made = twin, True
        return self.current

    def encode(self, texts: Sequence[str], is_query: bool):
        """Encode through the current encoder (the twin once made)."""
        return self.current.encode(texts, is_query)

    def __getattr__(self, name: str):
        return getattr(self.current, name)


def corpus_encoder(encoder, queries: Sequence[str], docs: Sequence[str]):
    """The encoder a corpus pass runs: a LazyTwin's twin (made now if not yet), else `encoder` itself."""
    return encoder.corpus_encoder(queries, docs) if isinstance(encoder, LazyTwin) else encoder
