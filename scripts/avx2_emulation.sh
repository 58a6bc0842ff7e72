#!/usr/bin/env bash
# Run a command as if on an AVX2-only CPU (no AVX-512, no AMX, no native bf16), as far as the
# libraries let a process choose its kernels: torch's ATen and oneDNN, faiss, numpy and numba.
# onnxruntime (MLAS) picks its kernels from cpuid and cannot be told otherwise. Alone, this catches
# tests that depend on one kernel family's floats; it runs at this host's speed (docs/ci.md, "A 2-core
# CPU with AVX2 only").
#   scripts/avx2_emulation.sh .venv/bin/python -m pytest -q tests/retrieval/test_sharded_encoding.py
# AVX2_EMULATION_CPUS=N also holds the command and its children to N CPUs (a CFS quota in a cgroup of
# its own; root, cgroup v1 or v2). 1.44 on a 2-core AVX-512 host: the AVX2-only EPYC ran the demo's
# warmup and mine 1.37-1.41x slower than this emulation at full speed (E83), and 2 / 1.39 = 1.44.
# Not a timing of that machine either: a quota slows work that keeps both cores busy, not a phase on
# one core, and onnxruntime's stages still ran at half the real machine's time (E107).
set -euo pipefail
export ATEN_CPU_CAPABILITY=avx2          # torch's CPU kernels (default, avx2, avx512)
export ONEDNN_MAX_CPU_ISA=AVX2           # oneDNN's matmuls and convolutions (no AVX-512, no AMX)
export FAISS_OPT_LEVEL=avx2              # faiss loads its AVX2 build
export NPY_DISABLE_CPU_FEATURES="AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"
export NUMBA_CPU_NAME=haswell            # numba compiles the kernels for an AVX2 core...
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-${TMPDIR:-/tmp}/uniret-numba-avx2}"   # ...into a cache of their own
export UNIRET_CPU_FLAGS_DROP="avx512_bf16 amx_bf16 amx_tile amx_int8"   # the code's own native-bf16 test

cpus=${AVX2_EMULATION_CPUS:-}
name=${AVX2_EMULATION_CGROUP:-uniret-avx2}   # the cgroup's name; one quota per name
if [ -n "$cpus" ]; then
    period=100000
    if ! [[ $cpus =~ ^[0-9]*\.?[0-9]+$ ]] || ! quota=$(awk -v c="$cpus" 'BEGIN { if (c <= 0) exit 1; printf "%d", c * 100000 }'); then
        echo "avx2_emulation: AVX2_EMULATION_CPUS=$cpus is not a positive number of CPUs" >&2; exit 2
    fi
    if [ -d /sys/fs/cgroup/cpu ] && [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then   # cgroup v1
        group=/sys/fs/cgroup/cpu/$name
        mkdir -p "$group" && echo "$period" > "$group/cpu.cfs_period_us" && echo "$quota" > "$group/cpu.cfs_quota_us"
        echo $$ > "$group/tasks"
    elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then                                 # cgroup v2
        group=/sys/fs/cgroup/$name
        mkdir -p "$group" && echo "$quota $period" > "$group/cpu.max" && echo $$ > "$group/cgroup.procs"
    else
        echo "avx2_emulation: no cgroup CPU controller to hold the command to $cpus CPUs" >&2; exit 2
    fi
    echo "avx2_emulation: held to $cpus CPUs ($group)" >&2
fi
exec "$@"
