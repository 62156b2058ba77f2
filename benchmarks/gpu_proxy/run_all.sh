#!/usr/bin/env bash
# The GPU proxy's whole run on an NVIDIA machine (CUDA >= 12 with nvcc and compute-sanitizer, PyTorch, Triton):
#   benchmarks/gpu_proxy/run_all.sh CORPUS_DIR TRITON_TUTORIALS_PY OUT_DIR
# CORPUS_DIR comes from `python -m benchmarks.gpu_proxy.record --out CORPUS_DIR` (run anywhere, no GPU);
# TRITON_TUTORIALS_PY holds Triton's tutorial kernels (not part of this repository; see docs/benchmarks.md).
# The two commands of device_run.sh in one go, without their time limits: the table and sweep, then the replay
# with the three sanitizers; writes OUT_DIR/{table.json,table.md,summary-table.txt,replay.json,sanitize-*.log,
# summary.txt}; exit status 0 when all is clean.
set -u
corpus=$1; tutorials=$2; out=$3
here=$(dirname "$0")
status=0
OUT=$out TABLE_TIMEOUT=${TABLE_TIMEOUT:-3600} REPLAY_TIMEOUT=0 "$here/device_run.sh" table "$corpus" "$tutorials" || status=1
mv "$out/summary.txt" "$out/summary-table.txt"
OUT=$out CHECK_BUDGET=${CHECK_BUDGET:-7200} "$here/device_run.sh" check "$corpus" || status=1
exit $status
