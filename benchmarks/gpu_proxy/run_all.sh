#!/usr/bin/env bash
# The GPU proxy's whole run on an NVIDIA machine (CUDA >= 12 with nvcc and compute-sanitizer, PyTorch, Triton):
#   benchmarks/gpu_proxy/run_all.sh CORPUS_DIR TRITON_TUTORIALS_PY OUT_DIR
# CORPUS_DIR comes from `python -m benchmarks.gpu_proxy.record --out CORPUS_DIR` (run anywhere, no GPU);
# TRITON_TUTORIALS_PY holds Triton's tutorial kernels (not part of this repository; see docs/benchmarks.md).
# Writes OUT_DIR/{replay.json,gpu_proxy_h200.json,sanitize-*.log,summary.txt}; exit status 0 when all is clean.
set -u
corpus=$1; tutorials=$2; out=$3
mkdir -p "$out"
export PYTHONPATH="$(pwd)/src:$(pwd)${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
build=/tmp/enc-proxy-build
status=0
timeout ${REPLAY_TIMEOUT:-200} python3 -m benchmarks.gpu_proxy.replay --corpus "$corpus" --build-dir $build --json "$out/replay.json" \
  > "$out/replay.log" 2>&1 || status=1
tail -3 "$out/replay.log"
timeout ${TABLE_TIMEOUT:-300} python3 -m benchmarks.gpu_proxy.table --tutorials "$tutorials" --out "$out/gpu_proxy_h200.json" ${TABLE_ARGS:-} \
  > "$out/table.log" 2>&1 || status=1
# compute-sanitizer over the corpus (4 shards per tool) and the table's kernels at small sizes, all at once
# (after the timings, which run alone).
san() { timeout ${SANITIZE_TIMEOUT:-300} compute-sanitizer --tool "$1" --target-processes all --kernel-name kns=enc_proxy_ --error-exitcode 9 \
          --print-limit 20 "${@:2}"; }
pids=()
for tool in memcheck racecheck synccheck; do
  for k in 0 1 2 3; do
    san $tool python3 -m benchmarks.gpu_proxy.replay --corpus "$corpus" --build-dir $build --shard $k/4 \
      > "$out/sanitize-$tool-corpus-$k.log" 2>&1 &
    pids+=($!)
  done
  san $tool python3 -m benchmarks.gpu_proxy.table --small --providers enceladus > "$out/sanitize-$tool-table.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait $pid || status=1; done
{
  tail -1 "$out/replay.log"
  for f in "$out"/sanitize-*.log; do echo "$(basename $f): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|replayed|providers failing' $f | tr '\n' ' ')"; done
  sed -n '/^NVIDIA\|^row /,$p' "$out/table.log"
} > "$out/summary.txt"
cat "$out/summary.txt"
exit $status
