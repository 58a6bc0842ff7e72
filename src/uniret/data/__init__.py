"""Data layer: BEIR IO, slicing, fetching and validation."""

from uniret.utils.lazy import lazy_exports

# public names -> the submodule defining them (imported on first access; see uniret.utils.lazy)
_EXPORTS = {
    "BeirDataset": "beir",
    "CORPUS_FILE": "beir",
    "Document": "beir",
    "Qrels": "beir",
    "read_qrels": "beir",
    "write_qrels": "beir",
    "split_qrels": "dev_split",
    "compare_stats": "drift",
    "dataset_stats": "drift",
    "load_stats": "drift",
    "save_stats": "drift",
    "fetch_dataset": "fetch",
    "NegativesRecord": "negatives",
    "iter_negatives": "negatives",
    "sample_negatives": "negatives",
    "write_negatives": "negatives",
    "open_dataset": "roots",
    "resolve_data_root": "roots",
    "write_slice": "slicing",
    "load_tables": "tables",
    "DatasetReport": "validation",
    "GxSession": "validation",
    "validate_dataset": "validation",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
