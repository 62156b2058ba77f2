#!/usr/bin/env bash
# Long differential fuzz campaign in parallel: N processes (default: one per core) of tests/fuzz/test_fuzz.py with
# random seeds for T seconds each; prints the program count and every process's failure (docs/robustness.md).
#   tools/fuzz_campaign.sh [SECONDS] [PROCESSES]      (PYTHON=... to pick the interpreter; default .venv/bin/python)
set -u
T=${1:-3600}
N=${2:-$(nproc)}
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$REPO/.venv/bin/python}
WORK=$(mktemp -d -t enceladus-fuzz-campaign-XXXX)
export PYTHONPATH=$REPO/tests${PYTHONPATH:+:$PYTHONPATH} ENCELADUS_PROXY_CHECK=0 HYPOTHESIS_PROFILE=fuzz-long
for i in $(seq 1 "$N"); do
  ( mkdir -p "$WORK/w$i" && cd "$WORK/w$i" && ENCELADUS_FUZZ_EXAMPLES=100000000 ENCELADUS_FUZZ_LOG="$WORK/log$i" \
    timeout "$T" "$PY" -m pytest "$REPO/tests/fuzz/test_fuzz.py" -q -x -p no:cacheprovider --rootdir="$REPO" \
    > "$WORK/out$i" 2>&1; echo "rc=$?" >> "$WORK/out$i" ) &
done
wait
total=$(cat "$WORK"/log* 2>/dev/null | wc -l)
echo "$total programs in $N processes of $T s (logs: $WORK)"
status=0
for i in $(seq 1 "$N"); do
  if ! grep -q "rc=124" "$WORK/out$i"; then  # 124: stopped by the time limit, no mismatch
    status=1; echo "##### process $i stopped early:"; tail -c 8000 "$WORK/out$i"
  fi
done
exit $status
