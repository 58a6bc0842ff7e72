"""Retrieval models: backbones, the shared encoder interface, recipes' heads, the reranker."""

from uniret.utils.lazy import lazy_exports

# public names -> the submodule defining them (imported on first access; see uniret.utils.lazy)
_EXPORTS = {
    "load_tokenizer": "backbones",
    "Encoded": "base",
    "dualrm_fuse": "clear",
    "default_device": "encode",
    "build_model": "factory",
    "load_model": "factory",
    "read_model_config": "factory",
    "save_model": "factory",
    "LexicalTeacher": "led",
    "teacher_group_scores": "led",
    "reference_vocab_max": "pooling",
    "combine_uni": "unifier",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
