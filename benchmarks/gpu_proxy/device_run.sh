#!/usr/bin/env bash
# The GPU proxy on a lent NVIDIA machine, as two commands of at most 9 minutes each (run from the repository root;
# CUDA >= 12 with nvcc and compute-sanitizer, PyTorch and Triton; no network, no pytest needed):
#
#   benchmarks/gpu_proxy/device_run.sh table    CORPUS TUTORIALS   # timings: the table + sweep, then the replay
#   benchmarks/gpu_proxy/device_run.sh sanitize CORPUS             # memcheck, racecheck, synccheck
#   benchmarks/gpu_proxy/device_run.sh check CORPUS                # the replay and the three sanitizers at once
#
# CORPUS comes from `python -m benchmarks.gpu_proxy.record --out CORPUS` (run anywhere, no GPU); TUTORIALS is a
# file with Triton's tutorial kernels (not part of this repository; see docs/benchmarks.md). Everything is written
# under $OUT (default ./proxy-out): table.json (the results; copy it to benchmarks/results/gpu_proxy_h200.json),
# table.md (`table.py --markdown`: the docs section's data), replay.json, sanitize-*.log, *.log, summary.txt.
# Each step has its own time limit (seconds; TABLE_TIMEOUT, REPLAY_TIMEOUT, CHECK_BUDGET in the environment) so a slow step
# leaves the others their time; exit status 0 when every step finished clean.
set -u
mode=${1:?usage: device_run.sh table CORPUS TUTORIALS | sanitize CORPUS | check CORPUS}
corpus=${2:?the recorded corpus directory}
out=${OUT:-$(pwd)/proxy-out}
mkdir -p "$out"
export PYTHONPATH="$(pwd)/src:$(pwd)${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
build=$(pwd)/build/gpu-proxy-corpus  # git-ignored: kept between the two commands on the same machine
start=$(date +%s)
status=0
step() {  # step NAME TIMEOUT COMMAND...: run, log to $out/NAME.log, report its time and status
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || status=1
  echo "step $name: exit $rc after $(( $(date +%s) - t0 )) s (limit $limit s)" | tee -a "$out/steps.txt"
  return 0
}
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
  nvcc --version | tail -2; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"

case $mode in
table)
  tutorials=${3:?the Triton tutorials file}
  # 1. the table and the sweep, alone on the GPU (its nvcc builds run in parallel before the timings)
  step table ${TABLE_TIMEOUT:-380} python3 -m benchmarks.gpu_proxy.table --tutorials "$tutorials" --sweep \
    --out "$out/table.json"
  [ -f "$out/table.json" ] && python3 -m benchmarks.gpu_proxy.table --markdown "$out/table.json" > "$out/table.md"
  # 2. the replay of the corpus: every kernel's outputs against the cpu backend's (nvcc on all cores), in the
  #    time left (the sanitize command replays the corpus too, under memcheck, comparing the same outputs)
  left=$(( 520 - ($(date +%s) - start) ))
  [ -n "${REPLAY_TIMEOUT:-}" ] && [ "$REPLAY_TIMEOUT" -lt "$left" ] && left=$REPLAY_TIMEOUT
  if [ "$left" -ge 30 ]; then
    step replay $left python3 -m benchmarks.gpu_proxy.replay --corpus "$corpus" --build-dir "$build" \
      --json "$out/replay.json"
  else
    echo "step replay: skipped, $left s left" | tee -a "$out/steps.txt"
  fi
  { cat "$out/steps.txt"; tail -1 "$out/replay.log"; sed -n '/^NVIDIA\|^row /,$p' "$out/table.log"
    [ -f "$out/table.md" ] && cat "$out/table.md"; } > "$out/summary.txt"
  ;;
sanitize|check)
  # cubins first (cached by source digest in $build: free when the table command ran on this machine)
  step build 150 python3 -m benchmarks.gpu_proxy.replay --corpus "$corpus" --build-dir "$build" --build-only
  limit=$(( ${CHECK_BUDGET:-510} - ($(date +%s) - start) ))  # CHECK_BUDGET: the whole command's seconds
  [ "$limit" -ge 60 ] || limit=60
  # each replay runs its kernels in worker processes (a fault ends only its worker): sanitize them all
  san() { timeout --kill-after=10 "$limit" compute-sanitizer --tool "$1" --target-processes all \
            --kernel-name kns=enc_proxy_ --error-exitcode 9 --print-limit 20 "${@:2}"; }
  pids=()
  if [ "$mode" = check ]; then  # the plain replay (outputs against the cpu backend's) alongside the sanitizers
    timeout --kill-after=10 "$limit" python3 -m benchmarks.gpu_proxy.replay --corpus "$corpus" --build-dir "$build" \
      --json "$out/replay.json" > "$out/replay.log" 2>&1 &
    pids+=($!)
  fi
  for tool in memcheck racecheck synccheck; do
    for k in 0 1 2 3; do
      san $tool python3 -m benchmarks.gpu_proxy.replay --corpus "$corpus" --build-dir "$build" --jobs 2 --shard $k/4 \
        > "$out/sanitize-$tool-corpus-$k.log" 2>&1 &
      pids+=($!)
    done
    # the table's Enceladus kernels at small sizes (new transpose conversion, atomics, layer norm at BLOCK 2048...)
    san $tool python3 -m benchmarks.gpu_proxy.table --small --providers enceladus > "$out/sanitize-$tool-table.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait $pid || status=1; done
  { cat "$out/steps.txt"
    for f in "$out"/sanitize-*.log; do
      echo "$(basename $f): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|replayed|providers failing' $f | tr '\n' ' ')"
    done
    [ -f "$out/replay.log" ] && grep -v '^    |' "$out/replay.log" | grep -E ': (mismatch|atomic-unverified|fault|launch-failed|translate-failed|compile-failed|undefined-conversion)|^replayed' ; } > "$out/summary.txt"
  ;;
*) echo "unknown mode $mode (table, sanitize or check)"; exit 2 ;;
esac
echo "total $(( $(date +%s) - start )) s, status $status" >> "$out/summary.txt"
cat "$out/summary.txt"
exit $status
