"""HTTP serving of a retrieval bundle: FastAPI app, hot-swappable searcher state, Prometheus metrics."""
