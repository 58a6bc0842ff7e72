#!/usr/bin/env bash
# The gate's error-rate study (E50): every candidate of results/gate/, then the study itself.
# Run from the repository root after `make demo` (its artifacts/ give the warm-up checkpoint and the
# mined negatives every retrain continues from). About 2 h on 2 cores (AMD EPYC): each retrain is a
# continual (~3.5 min) + index (~6.5 min) + evaluate (~1.5 min) run; see lab/gate_candidates.py.
set -uo pipefail
cd "$(dirname "$0")/.."
G=(.venv/bin/python lab/gate_candidates.py)
seed() {  # seed NAME CONTINUAL_SEED STATIC_SEED [NOTE]: an equal retrain
    "${G[@]}" retrain "$1" --kind equal --set "training.continual.train.seed=$2" --set "index.static_query.seed=$3" \
        --what "continual seed $2, static tower seed $3${4:-} from the demo's warmup and mined negatives"
}
seed seed-44 44 7 " (the params' own seeds)"   # reproduces the demo's bundle (E50)
for s in 1 2 3 4 5; do seed "seed-$s" "$s" "$((s + 100))"; done
"${G[@]}" retrain shuffled-40 --kind worse --shuffle-positives 0.4 \
    --what "positives of 40% of the mined training groups replaced by random documents (train qrels shuffled), params' seeds"
"${G[@]}" reevaluate stale-idf --kind worse --base .cache/gate-study/seed-44/artifacts \
    --set index.static_query.corpus_idf=false \
    --what "seed-44's bundle with the static query tables' train-corpus IDF on every corpus (index.static_query.corpus_idf false: a stale IDF table)"
"${G[@]}" reindex unlearned-weights --kind worse --base .cache/gate-study/seed-44/artifacts \
    --set index.fusion.enabled=false \
    --what "seed-44's checkpoint indexed without learned fusion weights (index.fusion.enabled false: equal weights)"
"${G[@]}" reindex lexical-top16 --kind worse --base .cache/gate-study/seed-44/artifacts \
    --set retrieval.lexical.top_n=16 \
    --what "seed-44's checkpoint with the lexical index pruned to 16 terms per document (retrieval.lexical.top_n 16)"
.venv/bin/uniret gate-study run
