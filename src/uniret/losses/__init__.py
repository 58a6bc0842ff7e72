"""Training objectives, one per module, composed by weights (`compose.CompositeLoss`)."""
