#!/usr/bin/env bash
# The whole test suite, in stages; exits non-zero if any stage failed.
#   1. unit + integration tests (ctest): installs the build dependencies
#      (skipping what is installed), builds RelWithDebInfo into build/;
#   2. reliability (scripts/test_reliability.sh): kill -9 crash loop per
#      sync mode, fuzz targets on their corpora (ASan+UBSan and TSan builds
#      with TDB_CI_SANITIZE=1);
#   3. the MariaDB engine (scripts/mariadb/): pinned server + headers,
#      plugin build, the mtr suite `tidesdb`.
# TDB_SKIP_RELIABILITY=1 / TDB_SKIP_MARIADB=1 skip a stage;
# TDB_RELIABILITY_ARGS passes flags (e.g. --quick).
set -uo pipefail
cd "$(dirname "$0")/.."

results=()
passed=0
failed=0
stage() { # name command...
    local name=$1
    shift
    local t0=$SECONDS
    echo "===== stage: $name"
    if "$@"; then
        results+=("$(printf '%-12s ok      %5ss' "$name" $((SECONDS - t0)))")
        passed=$((passed + 1))
    else
        results+=("$(printf '%-12s FAILED  %5ss' "$name" $((SECONDS - t0)))")
        failed=$((failed + 1))
    fi
}

unit() {
    bash scripts/setup.sh --build || return 1
    # -U: forget a TDB_SUBSYSTEMS cached by an older or partial configure.
    cmake -G Ninja -S . -B build -U TDB_SUBSYSTEMS -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTDB_BUILD_TESTS=ON &&
        cmake --build build -j2 &&
        ctest --test-dir build --output-on-failure -j2 --timeout 900
}

reliability() {
    # The unit stage already ran the fault-injection tests: skip them here.
    # The ASan/TSan builds run with TDB_CI_SANITIZE=1 (or scripts/sanitize.sh).
    local skip=fault
    [ "${TDB_CI_SANITIZE:-0}" = 1 ] || skip=fault,sanitize
    bash scripts/test_reliability.sh --build build --skip "$skip" ${TDB_RELIABILITY_ARGS:-}
}

mariadb() {
    # mtr connects to 'localhost': a minimal system may lack the entry.
    getent hosts localhost >/dev/null || echo "127.0.0.1 localhost" >>/etc/hosts
    bash scripts/mariadb/setup.sh && bash scripts/mariadb/build_plugin.sh && bash scripts/mariadb/mtr.sh
}

stage unit unit
if [ "$failed" = 0 ] && [ "${TDB_SKIP_RELIABILITY:-0}" != 1 ]; then stage reliability reliability; fi
if [ "${TDB_SKIP_MARIADB:-0}" != 1 ]; then stage mariadb mariadb; fi

echo "===== summary"
printf '%s\n' "${results[@]}"
echo "stages: $passed passed, $failed failed"
[ "$failed" = 0 ]
