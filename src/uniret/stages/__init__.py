"""One function per DAG stage; the CLI, dvc.yaml and the Kubeflow components all call these.

Each module `uniret.stages.<name>` exposes `run(ctx: StageContext) -> dict` (metrics summary).
"""

# DAG order; `report` runs beside gate (after evaluate).
STAGES = [
    "validate",
    "bm25",
    "warmup",
    "mine",
    "reranker",
    "continual",
    "distill",
    "index",
    "evaluate",
    "gate",
    "promote",
    "report",
]
