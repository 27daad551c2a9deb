#!/usr/bin/env bash
# check_layers_test.sh: check_layers.sh must fail, naming the file and
# line, on each kind of violation. Runs it on temporary copies of the
# sources, each with one violation injected (ctest: check_layers_selftest).
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failed=0

# A fresh copy of the checked directories.
fresh() {
    rm -rf "$tmp/tree"
    mkdir -p "$tmp/tree/mariadb" "$tmp/tree/scripts"
    cp -r "$here/src" "$here/include" "$here/tests" "$here/tools" "$here/fuzz" "$here/examples" "$tmp/tree/"
    [ -d "$here/mariadb/ha_tidesdb" ] && cp -r "$here/mariadb/ha_tidesdb" "$tmp/tree/mariadb/"
    cp "$here/scripts/check_layers.sh" "$tmp/tree/scripts/"
}

# run NAME EXPECT(pass|fail) PATTERN: check the copy; on fail, the output
# must match PATTERN (file:line).
run() {
    local name=$1 expect=$2 pattern=${3:-}
    local out rc
    out="$(bash "$tmp/tree/scripts/check_layers.sh" --root "$tmp/tree" --build "$tmp/nobuild" 2>&1)"
    rc=$?
    if [ "$expect" = pass ] && [ "$rc" != 0 ]; then
        echo "FAIL $name: expected a pass, got:"; echo "$out"; failed=1; return
    fi
    if [ "$expect" = fail ]; then
        if [ "$rc" = 0 ]; then
            echo "FAIL $name: expected a failure, the check passed"; failed=1; return
        fi
        if ! grep -qE "$pattern" <<<"$out"; then
            echo "FAIL $name: output does not name '$pattern':"; echo "$out"; failed=1; return
        fi
    fi
    echo "ok   $name"
}

# Insert a line after line 1 of a file.
inject() { sed -i "1a $2" "$tmp/tree/$1"; }

fresh
run "tree as it is" pass

fresh
inject src/util/slice.c '#include "db/db_impl.h"'
run "upward include (util -> db)" fail 'src/util/slice.c:2: upward include of "db/db_impl.h"'

fresh
inject src/sst/bloom.c '#include "version/version.h"'
run "upward include (sst -> version)" fail 'src/sst/bloom.c:2: upward include'

fresh
inject src/db/read.c '#include "txn/wbuf.h"'
run "upward include (db -> txn)" fail 'src/db/read.c:2: upward include'

fresh
inject src/db/cf.c '#include "testing/env_fault.h"'
run "library includes test-only code" fail 'src/db/cf.c:2: upward include'

fresh
inject src/version/version.c '#include "sst/reader_impl.h"'
run "private header of another folder" fail 'src/version/version.c:2: "sst/reader_impl.h" is private'

fresh
inject tools/bench/report.c '#include "util/slice.h"'
run "private header outside src/" fail 'tools/bench/report.c:2: private header "util/slice.h"'

fresh
inject src/txn/txn.c '#include "db/db_impl.h"'
run "txn includes the db's private struct" fail 'src/txn/txn.c:2: "db/db_impl.h" is private'

fresh
inject tests/util_test.cc '#include "db/db_impl.h"'
run "white-box test includes a private struct" fail 'tests/util_test.cc:2: "db/db_impl.h" is private'

fresh
seq 1 1001 | sed 's/.*/\/* filler *\//' >>"$tmp/tree/src/util/slice.c"
run "file over 1,000 lines" fail 'src/util/slice.c:1001: .* over the limit'

fresh
sed -i '0,/^TDB_API int tdb_close(/s//int tdb_close(/' "$tmp/tree/include/tidesdb/tidesdb.h"
run "public function without TDB_API" fail 'include/tidesdb/tidesdb.h:[0-9]+: public function declared without TDB_API'

fresh
# write_group.c already reaches cf.c (through write_apply.c): a call back
# from cf.c closes a cycle between the files of src/db.
inject src/db/cf.c 'static void cycle(tdb_t *db, writer_t *w) { db_group_write(db, w); }'
run "cycle between files of src/db" fail 'src/db/cf.c:2: uses db_group_write of src/db/write_group.c, which comes after cf'

fresh
inject src/db/config.c '/* a comment naming db_group_write( is no call */'
run "a function named in a comment" pass

fresh
printf '/* db/extra: nowhere in the order. */\n' >"$tmp/tree/src/db/extra.c"
run "file of src/db missing from the order" fail 'src/db/extra.c:0: not in the order of src/db'

[ "$failed" = 0 ] && echo "check_layers_test: all cases behave"
exit "$failed"
