"""The stage names of the retraining DAG, in order: what config, the CLI, dvc and Kubeflow agree on."""

# DAG order; `report` runs beside gate (after evaluate). bench measures the candidate bundle for the gate.
STAGES = [
    "validate",
    "bm25",
    "warmup",
    "mine",
    "reranker",
    "continual",
    "distill",
    "index",
    "bench",
    "evaluate",
    "gate",
    "promote",
    "report",
]
