"""Benchmarks (`uniret bench`): latency/QPS per retrieval mode, encoders, index sizes, top-N curve, HTTP."""
