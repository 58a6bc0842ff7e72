"""Names of the files a DAG stage hands to later stages, for readers outside the stages package.

The bm25 stage writes the BM25 names under artifacts/bm25/ (uniret.stages.bm25); the index stage's
fusion learning (uniret.evaluation.fusion_learning) reads them. The promote stage writes
PROMOTION_JSON; the report reads it.
"""

BM25_INDEXES = "indexes"  # <dataset>/: the Lucene BM25 index of each dataset in use
TRAIN_RUN = "train_run.trec"  # BM25 run of the train dataset's train queries
DEV_QRELS = "dev_qrels.tsv"  # qrels of the dev carve (data.dev), never trained on
DEV_RUNS = "dev_runs"  # <dataset>.trec: BM25 runs of data.dev.split for each of data.dev.datasets
PROMOTION_JSON = "promotion.json"  # artifacts/promote/: what the night did after the gate (uniret.stages.promote)
