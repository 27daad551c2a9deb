#!/usr/bin/env bash
# Self-test of the benchmark scripts' argument checks: every bad invocation
# below must be refused at once, with a message naming the option, before
# any set-up or run starts (an option left without its value used to loop
# forever in the argument parser).
set -uo pipefail
cd "$(dirname "$0")/.."
fails=0
refuse() { # expected-message script args...
  local want="$1" out rc
  shift
  out=$(timeout 30 bash "$@" 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL: bash $* exited $rc (want a refusal naming '$want'): $out"
    fails=$((fails + 1))
  fi
}
for s in scripts/bench_targets.sh scripts/bench_ceiling.sh; do
  refuse "--port needs a value" "$s" --port
  refuse "--out needs a value" "$s" --out
  refuse "unknown argument '--nope'" "$s" --nope
done
refuse "--size needs a value" scripts/bench_targets.sh --parts mem --size
refuse "--iterations needs a value" scripts/bench_targets.sh --iterations
refuse "--iterations: want a whole number of runs, at least 1, not '0'" scripts/bench_targets.sh --iterations 0
refuse "--iterations: want a whole number of runs, at least 1, not '2x'" scripts/bench_targets.sh --iterations 2x
refuse "--parts: unknown part 'memory'" scripts/bench_targets.sh --parts memory
refuse "--passes needs a value" scripts/bench_targets.sh --passes
refuse "--passes: want a whole number of passes, at least 1, not '0'" scripts/bench_targets.sh --passes 0
refuse "--durability needs a value" scripts/bench_ceiling.sh --durability
if ! bash scripts/bench_targets.sh --help | grep -q -- "--iterations N"; then
  echo "FAIL: bench_targets.sh --help does not describe --iterations"
  fails=$((fails + 1))
fi
if ! bash scripts/bench_targets.sh --help | grep -q -- "--passes N"; then
  echo "FAIL: bench_targets.sh --help does not describe --passes"
  fails=$((fails + 1))
fi
[ "$fails" -eq 0 ] && echo "bench_args_test: ok" || { echo "bench_args_test: $fails failed"; exit 1; }
