#!/usr/bin/env bash
# The CUDA backend's checks, for a machine with an NVIDIA GPU and driver:
# the CUDA tests against the real driver, then `stagehand bench cuda`, which
# prints one table (pooled take + drop against cuMemAlloc + cuMemFree at
# 256 B, 1 MiB, 64 MiB and 1 GiB; host-to-device bandwidth from pageable
# memory, pinned staging and the upload engine at 4 MiB and 256 MiB).
# Needs Rust (cargo); no CUDA toolkit. Takes a few minutes, mostly building.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null; then
    echo "cuda-check: cargo is not installed (https://rustup.rs)" >&2
    exit 2
fi
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so'; then
    echo "cuda-check: no libcuda.so on this machine: it has no NVIDIA driver" >&2
    exit 2
fi
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
fi

echo "== CUDA tests"
cargo test --release -p stagehand-gpu --features cuda --test cuda -- --nocapture
echo "== stagehand bench cuda"
cargo run --release -p stagehand-cli -- bench cuda --rounds "${ROUNDS:-11}"
