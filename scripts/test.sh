#!/usr/bin/env bash
# The whole test suite, in stages; exits non-zero if any stage failed.
#   1. unit + integration tests (ctest): installs the build dependencies
#      (skipping what is installed), builds RelWithDebInfo into build/,
#      checks the layering rules (scripts/check_layers.sh, seconds) and
#      the lock table of docs/design/locks.md (scripts/check_locks.sh) and
#      the status-variable table of tidesql.md (scripts/check_status_doc.sh);
#   2. bindings: the Go binding (bindings/go/test.sh: go vet, go test
#      -race) and the Python binding (bindings/python/test.sh: pip install
#      into a venv, pytest), both over build/'s library (about 1-2 min);
#   3. reliability (scripts/test_reliability.sh): kill -9 crash loop per
#      sync mode, fuzz targets on their corpora, the ASan+UBSan and TSan
#      builds running the unit tests and a short stress run
#      (TDB_CI_SANITIZE=0 skips the sanitizer builds);
#   4. the MariaDB engine (scripts/mariadb/test_all.sh, <= 30 min): pinned
#      server + headers, plugin build, mtr suite `tidesdb`, sysbench smoke,
#      TPC-C with check, kill -9 crash test.
# TDB_SKIP_RELIABILITY=1 / TDB_SKIP_MARIADB=1 skip a stage;
# TDB_RELIABILITY_ARGS passes flags (e.g. --quick).
set -uo pipefail
cd "$(dirname "$0")/.."

results=()
passed=0
failed=0
# Free space (MiB) on the filesystem of the checkout: printed at the start,
# and named beside a failed stage when under 1 GiB (a full disk fails
# builds and servers in ways that look like other faults).
free_mib() { df -Pk . 2>/dev/null | awk 'NR==2{print int($4/1024)}'; }
echo "test: $(free_mib) MiB free on the disk of $(pwd)"
stage() { # name command...
    local name=$1
    shift
    local t0=$SECONDS
    echo "===== stage: $name"
    if "$@"; then
        results+=("$(printf '%-12s ok      %5ss' "$name" $((SECONDS - t0)))")
        passed=$((passed + 1))
    else
        local free; free=$(free_mib)
        results+=("$(printf '%-12s FAILED  %5ss' "$name" $((SECONDS - t0)))$([ -n "$free" ] && [ "$free" -lt 1024 ] && echo " (only $free MiB free on the disk)")")
        failed=$((failed + 1))
    fi
}

unit() {
    bash scripts/setup.sh --build || return 1
    # -U: forget a TDB_SUBSYSTEMS cached by an older or partial configure.
    cmake -G Ninja -S . -B build -U TDB_SUBSYSTEMS -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTDB_BUILD_TESTS=ON &&
        cmake --build build -j2 &&
        bash scripts/check_layers.sh --build build &&
        bash scripts/check_locks.sh && bash scripts/check_locks.sh --selftest &&
        bash scripts/check_status_doc.sh && bash scripts/check_status_doc.sh --selftest &&
        ctest --test-dir build --output-on-failure -j2 --timeout 900
}

bindings() {
    local rc=0
    bash bindings/go/test.sh --build build || rc=1
    TIDESDB_BUILD_DIR="$PWD/build" bash bindings/python/test.sh || rc=1
    return $rc
}

reliability() {
    # The unit stage already ran the fault-injection tests: skip them here.
    # The ASan/TSan builds run unless TDB_CI_SANITIZE=0.
    local skip=fault
    [ "${TDB_CI_SANITIZE:-1}" = 0 ] && skip=fault,sanitize
    bash scripts/test_reliability.sh --build build --skip "$skip" ${TDB_RELIABILITY_ARGS:-}
}

mariadb() {
    # mtr connects to 'localhost': a minimal system may lack the entry.
    getent hosts localhost >/dev/null || echo "127.0.0.1 localhost" >>/etc/hosts
    # Every step is time-bounded; the whole stage within TOTAL_LIMIT (1800 s).
    TOTAL_LIMIT="${TDB_MARIADB_TOTAL_LIMIT:-1800}" bash scripts/mariadb/test_all.sh
}

stage unit unit
if [ "$failed" = 0 ]; then stage bindings bindings; fi
if [ "$failed" = 0 ] && [ "${TDB_SKIP_RELIABILITY:-0}" != 1 ]; then stage reliability reliability; fi
if [ "${TDB_SKIP_MARIADB:-0}" != 1 ]; then stage mariadb mariadb; fi

echo "===== summary"
printf '%s\n' "${results[@]}"
echo "stages: $passed passed, $failed failed"
[ "$failed" = 0 ]
