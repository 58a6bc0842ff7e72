#!/usr/bin/env bash
# Run a command as if on an AVX2-only CPU (no AVX-512, no AMX, no native bf16), as far as the
# libraries let a process choose its kernels: torch's ATen and oneDNN, faiss, numpy and numba.
# onnxruntime (MLAS) picks its kernels from cpuid and cannot be told otherwise, and the CPU's speed
# is what it is: this catches tests that depend on one kernel family's floats, it does not time
# the slower machine (docs/ci.md, "A 2-core CPU with AVX2 only").
#   scripts/avx2_emulation.sh .venv/bin/python -m pytest -q tests/retrieval/test_sharded_encoding.py
set -euo pipefail
export ATEN_CPU_CAPABILITY=avx2          # torch's CPU kernels (default, avx2, avx512)
export ONEDNN_MAX_CPU_ISA=AVX2           # oneDNN's matmuls and convolutions (no AVX-512, no AMX)
export FAISS_OPT_LEVEL=avx2              # faiss loads its AVX2 build
export NPY_DISABLE_CPU_FEATURES="AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"
export NUMBA_CPU_NAME=haswell            # numba compiles the kernels for an AVX2 core...
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-${TMPDIR:-/tmp}/uniret-numba-avx2}"   # ...into a cache of their own
export UNIRET_CPU_FLAGS_DROP="avx512_bf16 amx_bf16 amx_tile amx_int8"   # the code's own native-bf16 test
exec "$@"
