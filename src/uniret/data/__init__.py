"""Data layer: BEIR IO, slicing, fetching and validation."""
