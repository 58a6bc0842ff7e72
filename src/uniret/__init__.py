"""uniret: a production retraining system for hybrid (learned-sparse + dense) retrievers."""

__version__ = "0.1.0"
