"""The stage names of the retraining DAG, in order: what config, the CLI, dvc and Kubeflow agree on."""

# DAG order -> one-line description (the CLI's help). promote acts on every gate decision, report
# shows what it did; bench measures the candidate bundle for the gate.
STAGE_HELP = {
    "validate": "great-expectations checks (and drift) on every dataset in use; writes validated snapshots",
    "feedback": "UBI serving logs -> validated clicks (rejects with reasons), position propensities, "
                "IPS-weighted training pairs (days t-N..t-1) and click judgments (day t held out)",
    "bm25": "Lucene BM25 index, runs on every eval set, BM25 negatives for training queries",
    "warmup": "first training stage: the recipe's objective on BM25 negatives",
    "mine": "hard negatives from the warmup model's dense and lexical rankings",
    "reranker": "train the cross-encoder teacher on mined negatives",
    "continual": "continual stage on N_den U N_lex: contrastive + KL agreement (+ LED rank term)",
    "distill": "reranker-taught stage: KL distillation from teacher scores",
    "index": "encode the corpus: faiss + Lucene impact index + ONNX encoders, as a bundle",
    "bench": "measure the candidate bundle (latency per mode, encoders, sizes, HTTP) for the gate",
    "evaluate": "BEIR-style evaluation (nDCG@10, MRR@10, R@100, R@1000, MAP) of every mode",
    "gate": "candidate vs production vs BM25 against params.yaml thresholds (production re-scored on "
            "this run's data when its stored scores come from other data)",
    "promote": "publish the bundle and flip the production pointer when the gate passed and promotion "
               "is not held (paused, rolled-back content); otherwise refresh production's corpus "
               "(nightly.refresh_corpus); registry.keep_history prunes older bundles",
    "report": "W&B run (offline by default) and a local regression report with plots",
}
STAGES = list(STAGE_HELP)
