"""Operations around the DAG: the nightly retraining run."""
