"""The feedback stage's domain logic: which closed UBI spans it reads (spans), the ingestion
validation of their records with great-expectations (ingest), what it derives from the valid
ones (derive). Reading, writing and forgetting in the raw logs belong to uniret.ubi.
"""
