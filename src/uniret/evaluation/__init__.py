"""Evaluation: pytrec_eval metrics, run sources, the BEIR folder runner, expected scores, report plots."""

from uniret.utils.lazy import lazy_exports

# public names -> the submodule defining them (imported on first access; see uniret.utils.lazy)
_EXPORTS = {
    "BUNDLE": "bundle_source",
    "BundleSource": "bundle_source",
    "compare_evaluated": "compare_systems",
    "render_comparison": "compare_systems",
    "check_expected": "expected",
    "FolderRequest": "folder",
    "evaluate_folder": "folder",
    "find_datasets": "folder",
    "TuningSet": "fusion_tuning",
    "learn_fusion_weights": "fusion_tuning",
    "evaluate_run": "metrics",
    "TrainedModelSource": "model_source",
    "ZeroShotSource": "model_source",
    "final_checkpoint": "model_source",
    "write_evaluation": "outputs",
    "Comparison": "regression",
    "score_bundle_mode": "rescore",
    "compare": "regression",
    "render": "regression",
    "score_systems": "scoring",
    "PairedComparison": "significance",
    "paired_bootstrap": "significance",
    "Bm25Source": "sources",
    "RUN_SOURCES": "sources",
    "RunSource": "sources",
    "Runs": "sources",
    "SourceUnavailable": "sources",
    "collect_runs": "sources",
    "load_source": "sources",
    "metrics_table": "tables",
    "system_table": "tables",
    "Columns": "train_logs",
    "LOSS": "train_logs",
    "SPARSITY_COLUMNS": "train_logs",
    "STEP": "train_logs",
    "find_train_logs": "train_logs",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
