"""int8 query encoder: kept only when its parity with the fp32 graph holds, picked up by OnnxEncoder."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from transformers import AutoTokenizer

from uniret.config.retrieval import ParityConfig, QuantizeConfig
from uniret.export.parity import row_cosines
from uniret.export.quantize import quantize_query_encoder
from uniret.retrieval.onnx_encoder import QUERY_FILE, QUERY_INT8_FILE, OnnxEncoder

QUERIES = ["protein folding in cells", "vitamin d deficiency and bone density", "gene expression in tumours",
           "effects of smoking on the lungs"]
DOCS = ["Proteins fold into three-dimensional structures.", "Bone mineral density depends on vitamin D.",
        "Tumour cells change how genes are expressed.", "Smoking damages lung tissue over years."]


@pytest.fixture
def onnx_dir(tiny_bundle, tmp_path):
    out = tmp_path / "onnx"
    shutil.copytree(tiny_bundle / "onnx", out)
    (out / QUERY_INT8_FILE).unlink(missing_ok=True)
    return out


def _encoder(onnx_dir, tiny_bundle, query_file=None):
    tok = AutoTokenizer.from_pretrained(tiny_bundle / "tokenizer")
    return OnnxEncoder(onnx_dir, tok, 8, 32, 96, 1, query_file=query_file)


def test_int8_graph_is_kept_within_its_bound_and_served(onnx_dir, tiny_bundle):
    fp32 = _encoder(onnx_dir, tiny_bundle)
    out = quantize_query_encoder(onnx_dir, fp32, QUERIES, DOCS, QuantizeConfig(min_cosine=0.5, docs=3),
                                 ParityConfig(min_top10_overlap=0.0))
    assert out["used"] is True and (onnx_dir / QUERY_INT8_FILE).is_file()
    assert out["parity"]["docs"] == 3  # ranked over cfg.docs of the parity documents, not all of them
    assert out["bytes"]["int8"] < out["bytes"]["fp32"] / 2
    assert 0.5 <= out["parity"]["query_sparse_min_cosine"] <= 1.0
    served = _encoder(onnx_dir, tiny_bundle)  # no query_file: the int8 graph is preferred
    assert served.query_file == QUERY_INT8_FILE
    cos = row_cosines(served.encode(QUERIES, True).sparse, fp32.encode(QUERIES, True).sparse)
    assert np.isclose(cos.min(), out["parity"]["query_sparse_min_cosine"], atol=1e-6)
    assert not list(onnx_dir.glob(".query.int8.*"))  # no temp file left behind


def test_int8_graph_below_its_bound_is_dropped(onnx_dir, tiny_bundle):
    before = sorted(p.name for p in onnx_dir.iterdir())
    out = quantize_query_encoder(onnx_dir, _encoder(onnx_dir, tiny_bundle), QUERIES, DOCS,
                                 QuantizeConfig(min_cosine=1.0), ParityConfig())
    assert out["used"] is False and out["reason"].startswith("parity: ") and "min_cosine" in out["reason"]
    assert sorted(p.name for p in onnx_dir.iterdir()) == before  # nothing half-written left behind
    assert _encoder(onnx_dir, tiny_bundle).query_file == QUERY_FILE


def test_int8_document_graph_is_kept_within_its_bounds_and_used_for_corpora(onnx_dir, tiny_bundle):
    from uniret.config.retrieval import DocQuantizeConfig
    from uniret.export.quantize import quantize_doc_encoder
    from uniret.retrieval.onnx_encoder import DOC_FILE, DOC_INT8_FILE

    fp32 = _encoder(onnx_dir, tiny_bundle)
    cfg = DocQuantizeConfig(enabled=True, min_cosine=0.5, min_top10_overlap=0.0, docs=3)
    out = quantize_doc_encoder(onnx_dir, fp32, QUERIES, DOCS, cfg)
    assert out["used"] is True and (onnx_dir / DOC_INT8_FILE).is_file()
    assert out["bytes"]["int8"] < out["bytes"]["fp32"] / 2
    assert out["parity"]["docs"] == 3  # cfg.docs of the parity documents
    assert out["parity"]["fp32_docs_per_s"] > 0 and out["parity"]["int8_docs_per_s"] > 0
    assert not any(k.startswith("query_") for k in out["parity"])  # same query graph on both sides
    corpus = _encoder(onnx_dir, tiny_bundle)  # no doc_file: the kept int8 graph encodes documents
    assert corpus.doc_file == DOC_INT8_FILE and corpus.query_file == QUERY_FILE
    cos = row_cosines(corpus.encode(DOCS[:3], False).sparse, fp32.encode(DOCS[:3], False).sparse)
    assert np.isclose(cos.min(), out["parity"]["doc_sparse_min_cosine"], atol=1e-6)
    assert _encoder(onnx_dir, tiny_bundle).paths[False].name == DOC_INT8_FILE
    assert fp32.doc_file == DOC_FILE
    assert not list(onnx_dir.glob(".doc.int8.*"))


def test_int8_document_encodings_depend_on_their_batch_and_share_sessions_across_batch_sizes(onnx_dir, tiny_bundle):
    """Why the corpus passes share one batch size and the cache key holds it: dynamic int8 quantises
    each batch's activations with one scale, so a document's encoding depends on its batch mates."""
    from uniret.config.retrieval import DocQuantizeConfig
    from uniret.export.quantize import quantize_doc_encoder

    cfg = DocQuantizeConfig(enabled=True, min_cosine=0.5, min_top10_overlap=0.0, docs=3)
    assert quantize_doc_encoder(onnx_dir, _encoder(onnx_dir, tiny_bundle), QUERIES, DOCS, cfg)["used"] is True
    batch8 = _encoder(onnx_dir, tiny_bundle)
    batch1 = batch8.with_batch_size(1)
    assert batch1.batch_size == 1 and batch8.batch_size == 8
    assert batch1.session(False) is batch8.session(False)  # one session per graph, whatever the batch
    together, alone = batch8.encode(DOCS, False), batch1.encode(DOCS, False)
    assert not np.array_equal(together.sparse.toarray(), alone.sparse.toarray())
    fresh = OnnxEncoder(onnx_dir, batch8.tokenizer, 1, 32, 96, 1)
    assert np.array_equal(fresh.encode(DOCS, False).sparse.toarray(), alone.sparse.toarray())
    # corpus passes feed many shapes: the document session plans no memory per shape (E26)
    assert batch8.session(False).get_session_options().enable_mem_pattern is False
    assert batch8.session(True).get_session_options().enable_mem_pattern is True
    assert batch8.session(False).get_session_options().enable_cpu_mem_arena is True
    from uniret.retrieval.onnx_encoder import inference_session

    assert inference_session(batch8.paths[False], 1, cpu_arena=False).get_session_options().enable_cpu_mem_arena is False


def test_int8_document_graph_below_its_bounds_or_disabled_is_not_written(onnx_dir, tiny_bundle):
    from uniret.config.retrieval import DocQuantizeConfig
    from uniret.export.quantize import quantize_doc_encoder
    from uniret.retrieval.onnx_encoder import DOC_FILE

    before = sorted(p.name for p in onnx_dir.iterdir())
    strict = DocQuantizeConfig(enabled=True, min_cosine=1.0, min_top10_overlap=1.0)
    out = quantize_doc_encoder(onnx_dir, _encoder(onnx_dir, tiny_bundle), QUERIES, DOCS, strict)
    assert out["used"] is False and "doc_" in out["reason"] and "min_cosine" in out["reason"]
    off = quantize_doc_encoder(onnx_dir, _encoder(onnx_dir, tiny_bundle), QUERIES, DOCS, DocQuantizeConfig())
    assert off == {"enabled": False, "used": False, "reason": "disabled (index.export.quantize_docs.enabled)"}
    assert sorted(p.name for p in onnx_dir.iterdir()) == before
    assert _encoder(onnx_dir, tiny_bundle).doc_file == DOC_FILE


class _Counting:
    """An encoder that records every text it is asked to encode."""

    def __init__(self, inner):
        self.inner, self.seen = inner, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def encode(self, texts, is_query):
        self.seen += [(is_query, t) for t in texts]
        return self.inner.encode(texts, is_query)


def test_remembering_encoder_encodes_each_text_once_in_any_order(onnx_dir, tiny_bundle):
    from uniret.export.parity import RememberingEncoder

    fp32 = _encoder(onnx_dir, tiny_bundle)
    counting = _Counting(fp32)
    memo = RememberingEncoder(counting)
    assert memo.docs_per_s is None and memo.batch_size == fp32.batch_size  # other attributes: the inner's
    first = memo.encode(DOCS[:3], False)
    again = memo.encode([DOCS[2], DOCS[0], DOCS[3], DOCS[0]], False)  # repeats, a new text, a duplicate
    queries = memo.encode(DOCS[:1], True)  # the same text as a query is another encoding
    assert counting.seen == [(False, d) for d in DOCS[:4]] + [(True, DOCS[0])]
    direct = fp32.encode([DOCS[2], DOCS[0], DOCS[3], DOCS[0]], False)
    assert np.allclose(again.dense, direct.dense, atol=1e-5)
    assert row_cosines(again.sparse, direct.sparse).min() > 0.99999
    assert np.array_equal(again.dense[1], first.dense[0]) and np.array_equal(again.dense[3], first.dense[0])
    assert len(queries) == 1 and memo.docs_per_s > 0


def test_int8_checks_with_a_remembering_reference_encode_nothing_twice(onnx_dir, tiny_bundle):
    """Parity, then the int8 query and document checks: the fp32 graph encodes each text once, each
    int8 graph only its own side, and the figures keep a real fp32 documents/s."""
    from uniret.config.retrieval import DocQuantizeConfig
    from uniret.export.parity import RememberingEncoder, measure_parity
    from uniret.export.quantize import quantize_doc_encoder

    counting = _Counting(_encoder(onnx_dir, tiny_bundle))
    reference = RememberingEncoder(counting)
    measure_parity(_encoder(onnx_dir, tiny_bundle), reference, QUERIES, DOCS)  # the export parity check
    seen = list(counting.seen)
    q8 = quantize_query_encoder(onnx_dir, reference, QUERIES, DOCS, QuantizeConfig(min_cosine=0.0, docs=3),
                                ParityConfig(min_top10_overlap=0.0))
    d8 = quantize_doc_encoder(onnx_dir, reference, QUERIES, DOCS,
                              DocQuantizeConfig(enabled=True, min_cosine=0.0, min_top10_overlap=0.0, docs=3))
    assert q8["used"] and d8["used"]
    assert counting.seen == seen  # both checks answered from the parity pass
    assert d8["parity"]["fp32_docs_per_s"] == reference.docs_per_s > 0
    assert d8["parity"]["doc_sparse_min_cosine"] < 1.0  # the int8 graph really encoded the documents


def test_exported_graphs_have_eager_attention_and_an_int8_vocabulary_gemm(onnx_dir, tiny_bundle):
    import onnx

    from uniret.config.retrieval import DocQuantizeConfig
    from uniret.export.quantize import quantize_doc_encoder
    from uniret.retrieval.onnx_encoder import DOC_FILE, DOC_INT8_FILE

    fp32 = onnx.load(str(onnx_dir / DOC_FILE))
    assert not [n for n in fp32.graph.node if n.op_type == "IsNaN"]  # traced SDPA wraps softmax in Where(IsNaN)
    vocab = len(AutoTokenizer.from_pretrained(tiny_bundle / "tokenizer"))
    quantize_doc_encoder(onnx_dir, _encoder(onnx_dir, tiny_bundle), QUERIES, DOCS,
                         DocQuantizeConfig(enabled=True, min_cosine=0.0, min_top10_overlap=0.0, docs=3))
    int8 = onnx.load(str(onnx_dir / DOC_INT8_FILE))
    weights = {i.name: (tuple(i.dims), i.data_type) for i in int8.graph.initializer}
    vocab_weights = [weights[x] for n in int8.graph.node if "MatMul" in n.op_type for x in n.input
                     if x in weights and vocab in weights[x][0]]
    assert vocab_weights and all(dtype == onnx.TensorProto.INT8 for _, dtype in vocab_weights)
