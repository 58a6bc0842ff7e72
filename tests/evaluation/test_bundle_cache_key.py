"""The bundle source and the trained source share corpus encodings of the same checkpoint."""

from __future__ import annotations

import json

from uniret.evaluation.bundle_source import bundle_encoder_key
from uniret.retrieval.bundle import MANIFEST, ONNX_DIR
from uniret.retrieval.corpus_cache import model_key


def test_bundle_key_equals_the_trained_source_key_of_its_checkpoint(tiny_bundle):
    from uniret.models.factory import load_model

    manifest = json.loads((tiny_bundle / MANIFEST).read_text())
    checkpoint = tiny_bundle.parent.parent / "warmup" / "model"
    model, _ = load_model(checkpoint)
    assert bundle_encoder_key(manifest, tiny_bundle / ONNX_DIR, 8) == model_key(model, checkpoint)

    # another checkpoint (one byte of weights) is another key
    other = dict(manifest, model=dict(manifest["model"], checkpoint_sha256="0" * 64))
    assert bundle_encoder_key(other, tiny_bundle / ONNX_DIR, 8) != model_key(model, checkpoint)


def test_bundle_without_checkpoint_identity_falls_back_to_its_graphs(tiny_bundle):
    manifest = json.loads((tiny_bundle / MANIFEST).read_text())
    key = bundle_encoder_key(dict(manifest, model={}), tiny_bundle / ONNX_DIR, 8)
    assert key.startswith("onnx-")


def test_int8_document_graph_gets_its_own_key(tiny_bundle, tmp_path):
    """Encodings from doc.int8.onnx differ from the checkpoint's: they must never be shared with it."""
    import shutil

    from uniret.retrieval.onnx_encoder import DOC_FILE, DOC_INT8_FILE

    manifest = json.loads((tiny_bundle / MANIFEST).read_text())
    onnx_dir = tmp_path / "onnx"
    shutil.copytree(tiny_bundle / ONNX_DIR, onnx_dir)
    fp32_key = bundle_encoder_key(manifest, onnx_dir, 8)
    shutil.copy(onnx_dir / DOC_FILE, onnx_dir / DOC_INT8_FILE)  # stands for a kept int8 graph
    assert bundle_encoder_key(manifest, onnx_dir, 8) != fp32_key
    # int8 encodings depend on the batch they were made in (one activation scale per batch): another
    # batch size is another entry, while fp32 encodings are shared across batch sizes
    assert bundle_encoder_key(manifest, onnx_dir, 16) != bundle_encoder_key(manifest, onnx_dir, 8)
    assert bundle_encoder_key(dict(manifest, model={}), onnx_dir, 16) != bundle_encoder_key(
        dict(manifest, model={}), onnx_dir, 8)
    (onnx_dir / DOC_INT8_FILE).unlink()
    assert bundle_encoder_key(manifest, onnx_dir, 16) == bundle_encoder_key(manifest, onnx_dir, 8) == fp32_key
