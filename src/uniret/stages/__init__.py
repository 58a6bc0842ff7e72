"""One function per DAG stage; the CLI, dvc.yaml and the Kubeflow components all call these.

Each module `uniret.stages.<name>` exposes `run(ctx: StageContext) -> dict` (metrics summary).
"""

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
