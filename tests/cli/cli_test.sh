#!/usr/bin/env bash
# End-to-end tests of the tidesdb tool (tools/cli): a database made with the
# library (cli_fixture make), inspected and changed with the tool.
#   cli_test.sh CASE TOOL FIXTURE WORKDIR [BUILD_DIR]
# One ctest case per CASE (tools/cli/CMakeLists.txt); each takes about a
# second. JSON output is checked with python3's json parser.
set -uo pipefail
case_name=$1 T=$2 FIX=$3 W=$4 BUILD=${5:-}
rm -rf "$W"
mkdir -p "$W"
DB=$W/db
failures=0
holder=

fail() { echo "FAIL [$case_name]: $*" >&2; failures=$((failures + 1)); }
cleanup() { [ -n "$holder" ] && kill "$holder" 2>/dev/null; wait 2>/dev/null; }
trap cleanup EXIT

# run ARGS...: the tool's stdout in $out, stderr in $err, status in $rc.
run() {
    out=$("$T" "$@" 2>"$W/stderr")
    rc=$?
    err=$(cat "$W/stderr")
}
expect_rc() { [ "$rc" = "$1" ] || fail "tidesdb ${*:2}: exit $rc, want $1 (stderr: $err)"; }
expect_out() { [ "$out" = "$1" ] || fail "${2:-output}: got [$out], want [$1]"; }
expect_has() { grep -qF -- "$1" <<<"$2" || fail "${3:-output} lacks [$1]: [$2]"; }
# json EXPR: evaluate EXPR (Python) on the parsed $out as `d`; must be true.
json() {
    python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); sys.exit(0 if eval(sys.argv[1]) else 1)' "$1" <<<"$out" ||
        fail "json check [$1] on: $out"
}
lines() { [ -z "$out" ] && echo 0 || wc -l <<<"$out"; }

"$FIX" make "$DB" || { echo "FAIL: cli_fixture make" >&2; exit 1; }
ALL_KEYS=106 # 5 fruit, k000..k099, one binary key

case "$case_name" in
help)
    run --help; expect_rc 0; top=$out
    for c in stats verify scan get put delete dump-sst dump-wal compact checkpoint cf repair; do
        expect_has "  $c " "$top" "tidesdb --help"
        run "$c" --help; expect_rc 0 "$c" --help
        expect_has "tidesdb $c" "$out" "tidesdb $c --help"
    done
    run nosuch; expect_rc 3; expect_has "unknown command 'nosuch'" "$err"
    run scan --db "$DB" --bogus; expect_rc 3; expect_has "unknown option '--bogus'" "$err"
    run scan; expect_rc 3; expect_has "--db DIR is required" "$err"
    run get --db "$DB"; expect_rc 3; expect_has "wrong number of arguments" "$err"
    run scan --db "$DB" --limit=-2; expect_rc 3
    ;;
stats)
    run stats --db "$DB"; expect_rc 0
    expect_has "column family 'default'" "$out"
    expect_has "column family 'users'" "$out"
    expect_has "space amplification" "$out"
    expect_has "block cache" "$out"
    grep -qE '^  1 +[1-9][0-9]* +[1-9][0-9]*$' <<<"$out" || fail "no level-1 files in: $out"
    run stats --db "$DB" --json; expect_rc 0
    json 'len(d["families"]) == 2 and d["families"][0]["name"] == "default"'
    json 'd["families"][0]["levels"][0]["level"] == 1 and d["families"][0]["files"] >= 1 and d["families"][0]["bytes"] > 0'
    json 'd["families"][0]["space_amplification"] == 1.0 and d["database"]["last_sequence"] >= 107'
    json '"block_cache_hits" in d["database"] and "write_amplification" in d["database"]'
    run stats --db "$DB" --cf users --json; expect_rc 0
    json '[f["name"] for f in d["families"]] == ["users"]'
    run stats --db "$DB" --cf nosuch; expect_rc 2; expect_has "no column family 'nosuch'" "$err"
    run stats --db "$W/none"; expect_rc 2; expect_has "no such database directory" "$err"
    mkdir "$W/empty"; run stats --db "$W/empty"; expect_rc 2; expect_has "not a TidesDB database" "$err"
    [ -z "$(ls -A "$W/empty")" ] || fail "stats created files in a directory that holds no database"
    ;;
scan)
    run scan --db "$DB"; expect_rc 0
    [ "$(lines)" = "$ALL_KEYS" ] || fail "full scan: $(lines) lines, want $ALL_KEYS"
    expect_has "$ALL_KEYS entries" "$err"
    [ "$(head -1 <<<"$out")" = $'\\x00\\xff\t\\x01\\x02' ] || fail "first key: $(head -1 <<<"$out")"
    run scan --db "$DB" --prefix ap; expect_rc 0; expect_out $'apple\tred\napricot\torange' "--prefix ap"
    run scan --db "$DB" --from b --to c; expect_rc 0; expect_out $'banana\tyellow\nblueberry\tblue' "--from b --to c"
    run scan --db "$DB" --from banana --to blueberry --keys-only; expect_rc 0; expect_out "banana" "[banana, blueberry)"
    run scan --db "$DB" --limit 3 --keys-only; expect_rc 0; expect_out $'\\x00\\xff\napple\napricot' "--limit 3"
    run scan --db "$DB" --prefix k0 --from k095 --keys-only; expect_rc 0
    expect_out $'k095\nk096\nk097\nk098\nk099' "--prefix k0 --from k095"
    run scan --db "$DB" --prefix k --to k002 --keys-only; expect_rc 0; expect_out $'k000\nk001' "--prefix k --to k002"
    run scan --db "$DB" --prefix zz; expect_rc 0; expect_out "" "--prefix zz"
    run scan --db "$DB" --limit 0; expect_rc 0; expect_out "" "--limit 0"
    run scan --db "$DB" --cf users; expect_rc 0; expect_out $'alice\t1\nbob\t2' "--cf users"
    run scan --db "$DB" --cf nosuch; expect_rc 2; expect_has "no column family 'nosuch'" "$err"
    ;;
scan_reverse)
    run scan --db "$DB" --reverse --keys-only; expect_rc 0
    [ "$(lines)" = "$ALL_KEYS" ] || fail "reverse scan: $(lines) lines"
    [ "$(head -1 <<<"$out")" = k099 ] && [ "$(tail -1 <<<"$out")" = '\x00\xff' ] || fail "reverse order: $out"
    run scan --db "$DB" --reverse --prefix k0 --limit 2 --keys-only; expect_rc 0; expect_out $'k099\nk098' "reverse prefix"
    run scan --db "$DB" --reverse --from apple --to banana --keys-only; expect_rc 0
    expect_out $'apricot\napple' "reverse [apple, banana)"
    run scan --db "$DB" --reverse --to k000 --limit 1; expect_rc 0; expect_out $'cherry\tdark red' "reverse --to k000"
    run scan --db "$DB" --reverse --prefix k050 --keys-only; expect_rc 0; expect_out "k050" "reverse --prefix k050"
    run scan --db "$DB" --reverse --format hex --prefix ff; expect_rc 0; expect_out "" "reverse prefix ff"
    run scan --db "$DB" --reverse --format hex --prefix 00; expect_rc 0; expect_out $'00ff\t0102' "reverse prefix 00"
    ;;
getputdelete)
    run get --db "$DB" apple; expect_rc 0; expect_out "red" "get apple"
    run get --db "$DB" k077; expect_rc 0; expect_out "v077" "get k077 (from the WAL)"
    run get --db "$DB" k042; expect_rc 0; expect_out "v042" "get k042 (in the table)"
    run get --db "$DB" nosuch; expect_rc 1; expect_has "key not found" "$err"
    run put --db "$DB" grape purple; expect_rc 0
    run get --db "$DB" grape; expect_rc 0; expect_out "purple" "get after put"
    run put --db "$DB" --sync grape green; expect_rc 0
    run get --db "$DB" grape; expect_rc 0; expect_out "green" "get after overwrite"
    run delete --db "$DB" grape; expect_rc 0
    run get --db "$DB" grape; expect_rc 1
    run delete --db "$DB" apple; expect_rc 0
    run scan --db "$DB" --prefix ap --keys-only; expect_out "apricot" "scan after delete"
    run put --db "$DB" --cf users carol 3; expect_rc 0
    run get --db "$DB" --cf users carol; expect_rc 0; expect_out "3"
    run get --db "$DB" carol; expect_rc 1
    run put --db "$DB" --cf nosuch a b; expect_rc 2; expect_has "no column family 'nosuch'" "$err"
    run put --db "$W/new" a b; expect_rc 2; expect_has "no such database directory" "$err"
    run put --db "$W/new" --create a b; expect_rc 0
    run get --db "$W/new" a; expect_rc 0; expect_out "b" "get in a created database"
    run put --db "$DB" -- -dash minus; expect_rc 0
    run get --db "$DB" -- -dash; expect_rc 0; expect_out "minus" "a key starting with -"
    ;;
formats)
    run get --db "$DB" '\x00\xff'; expect_rc 0; expect_out '\x01\x02' "text escapes"
    run get --db "$DB" --key-format hex --value-format hex 00ff; expect_rc 0; expect_out "0102" "hex"
    run get --db "$DB" --key-format base64 --value-format base64 AP8=; expect_rc 0; expect_out "AQI=" "base64"
    run get --db "$DB" --format hex 6170706c65; expect_rc 0; expect_out "726564" "--format hex"
    run put --db "$DB" --format base64 'YmFjaw==' 'c2xhc2g='; expect_rc 0
    run get --db "$DB" back; expect_rc 0; expect_out "slash" "base64 put"
    run put --db "$DB" 'a\\b' 'x\x41'; expect_rc 0
    run get --db "$DB" --key-format hex 615c62; expect_rc 0; expect_out 'xA' "backslash escape"
    run scan --db "$DB" --prefix 'a\\'; expect_rc 0; expect_out $'a\\\\b\txA' "a backslash shown escaped"
    run scan --db "$DB" --format base64 --prefix YXA= --keys-only; expect_rc 0; expect_out $'YXBwbGU=\nYXByaWNvdA==' "base64 keys"
    run get --db "$DB" --format hex 6g; expect_rc 3; expect_has "not valid hex" "$err"
    run get --db "$DB" --format base64 'AP8'; expect_rc 3; expect_has "not valid base64" "$err"
    run get --db "$DB" 'bad\q'; expect_rc 3; expect_has "not valid text" "$err"
    run get --db "$DB" --format octal 1; expect_rc 3; expect_has "wants text, hex or base64" "$err"
    ;;
json)
    run scan --db "$DB" --json; expect_rc 0
    json 'd["cf"] == "default" and d["count"] == '$ALL_KEYS' and len(d["entries"]) == '$ALL_KEYS
    json 'd["entries"][0] == {"key": "\\x00\\xff", "value": "\\x01\\x02"} and d["entries"][1] == {"key": "apple", "value": "red"}'
    run scan --db "$DB" --json --prefix zz; expect_rc 0; json 'd["count"] == 0 and d["entries"] == []'
    run scan --db "$DB" --json --format hex --keys-only --limit 2; expect_rc 0
    json '[e["key"] for e in d["entries"]] == ["00ff", "6170706c65"] and "value" not in d["entries"][0]'
    run get --db "$DB" --json cherry; expect_rc 0; json 'd == {"key": "cherry", "found": True, "value": "dark red"}'
    run get --db "$DB" --json nosuch; expect_rc 1; json 'd == {"key": "nosuch", "found": False}'
    run put --db "$DB" --json 'q"uote' 'v'; expect_rc 0; json 'd["ok"]'
    run scan --db "$DB" --json --prefix q; expect_rc 0; json 'd["entries"][0]["key"] == "q\"uote"'
    run cf list --db "$DB" --json; expect_rc 0; json 'd == {"families": ["default", "users"]}'
    run verify --db "$DB" --json; expect_rc 0; json 'd["ok"] and d["damaged"] == []'
    ;;
cf)
    run cf list --db "$DB"; expect_rc 0; expect_out $'default\nusers' "cf list"
    run cf create --db "$DB" logs; expect_rc 0; expect_has "created column family 'logs'" "$out"
    run cf list --db "$DB"; expect_out $'default\nusers\nlogs' "cf list after create"
    run put --db "$DB" --cf logs l1 x; expect_rc 0
    run scan --db "$DB" --cf logs; expect_out $'l1\tx' "scan new family"
    run cf create --db "$DB" logs; expect_rc 2; expect_has "exists already" "$err"
    run cf drop --db "$DB" logs; expect_rc 0
    run cf list --db "$DB"; expect_out $'default\nusers' "cf list after drop"
    run cf drop --db "$DB" logs; expect_rc 2; expect_has "no column family 'logs'" "$err"
    run cf drop --db "$DB" default; expect_rc 2
    run cf list --db "$DB" extra; expect_rc 3
    run cf create --db "$DB"; expect_rc 3
    run cf rename --db "$DB" a; expect_rc 3; expect_has "unknown action 'rename'" "$err"
    ;;
checkpoint)
    run checkpoint --db "$DB" "$W/copy"; expect_rc 0
    grep -qE "^checkpoint .*/copy at sequence [0-9]+$" <<<"$out" || fail "checkpoint output: $out"
    c=$("$FIX" check "$W/copy"); [ "$c" = "keys=$ALL_KEYS apple=red users=2" ] || fail "copy holds: $c"
    run put --db "$DB" apple green; expect_rc 0
    c=$("$FIX" check "$W/copy"); [ "$c" = "keys=$ALL_KEYS apple=red users=2" ] || fail "copy changed with the source: $c"
    run get --db "$W/copy" apple; expect_rc 0; expect_out "red" "get in the copy"
    run verify --db "$W/copy"; expect_rc 0
    run checkpoint --db "$DB" --json "$W/copy2"; expect_rc 0; json 'd["sequence"] >= 108'
    run checkpoint --db "$DB" "$W/copy"; expect_rc 2; expect_has "copy" "$err"
    ;;
compact)
    run compact --db "$DB" --from k000 --to k050 --json; expect_rc 0
    json 'd["compacted"] == "all families" and d["files_after"] >= 1'
    run scan --db "$DB" --keys-only; [ "$(lines)" = "$ALL_KEYS" ] || fail "scan after a range compact: $(lines)"
    run compact --db "$DB" --cf users --prefix al; expect_rc 0; expect_has "compacted users" "$out"
    run get --db "$DB" --cf users alice; expect_rc 0; expect_out "1" "alice after a prefix compact"
    run compact --db "$DB" --from b --to a; expect_rc 3; expect_has "range is empty" "$err"
    run compact --db "$DB" --key-format hex --from zz; expect_rc 3; expect_has "--from" "$err"
    run compact --db "$DB"; expect_rc 0; expect_has "compacted all families" "$out"
    run stats --db "$DB" --json; json 'len(d["families"][0]["levels"]) == 1 and d["families"][0]["space_amplification"] == 1.0'
    run scan --db "$DB" --keys-only; [ "$(lines)" = "$ALL_KEYS" ] || fail "scan after compact: $(lines)"
    run compact --db "$DB" --cf users --json; expect_rc 0
    json 'd["compacted"] == "users" and d["files_after"] >= 1 and d["bytes_after"] > 0'
    run stats --db "$DB" --cf users --json; json 'len(d["families"][0]["levels"]) == 1'
    run verify --db "$DB"; expect_rc 0
    ;;
dump_sst)
    sst=
    for f in "$DB"/*.sst; do "$T" dump-sst --keys-only "$f" | grep -q apple && sst=$f; done
    [ -n "$sst" ] || fail "no table of the default family in the fixture"
    run dump-sst "$sst"; expect_rc 0
    expect_has "num_entries" "$out"; expect_has $'\tput\tapple\tred' "$out"; expect_has "smallest" "$out"
    run dump-sst --json "$sst"; expect_rc 0
    json 'd["entries"] and len(d["entries"]) == d["shown"] and d["error"] is None'
    json 'len(d["entries"]) == d["num_entries"] == 55 and d["num_deletes"] == 0'
    python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); es=d["entries"]
assert d["largest"]["key"] >= d["smallest"]["key"]
assert all(e["type"] == "put" and e["seq"] > 0 for e in es), es
' <<<"$out" || fail "dump-sst entries: $out"
    run dump-sst --limit 2 --keys-only "$sst"; expect_rc 0
    [ "$(grep -c $'\tput\t' <<<"$out")" = 2 ] || fail "dump-sst --limit 2: $out"
    run dump-sst "$W/none.sst"; expect_rc 2
    run dump-sst "$DB/MANIFEST"; expect_rc 2; expect_has "corruption" "$err"; expect_has "not a table" "$err"
    ;;
dump_wal)
    wal=$(ls "$DB"/*.log | tail -1)
    [ -n "$wal" ] || fail "no WAL in the fixture"
    run dump-wal "$wal"; expect_rc 0
    expect_has "seq=" "$out"; expect_has $'put\tusers\tbob\t2' "$out"; expect_has $'put\tdefault\tk099\tv099' "$out"
    expect_has "end: clean" "$out"
    run dump-wal --json "$wal"; expect_rc 0
    json 'd["end"] == "clean" and d["families_named"] and d["shown"] == len(d["records"])'
    json 'all(r["entries"][i]["seq"] == r["seq"] + i for r in d["records"] for i in range(len(r["entries"])))'
    json '{"seq": d["records"][-1]["seq"], "type": "put", "cf": "users", "key": "bob", "value": "2"} in d["records"][-1]["entries"]'
    run dump-wal --limit 1 "$wal"; expect_rc 0; expect_has "limit reached" "$out"
    # A torn tail: cut the last record short.
    cp "$wal" "$W/torn.log"; truncate -s -1 "$W/torn.log"
    run dump-wal --json "$W/torn.log"; expect_rc 0; json 'd["end"] == "torn tail"'
    ;;
dump_kinds)
    "$FIX" kinds "$W/k" || fail "cli_fixture kinds"
    sst=$(ls "$W"/k/*.sst | head -1)
    run dump-sst --json "$sst"; expect_rc 0
    python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); es={e["key"]: e for e in d["entries"]}
assert d["num_entries"] == 5 and d["num_deletes"] == 2 and d["num_range_deletes"] == 1 and d["separated_values"] == 1, d
assert [(t["key"], t["end"], t["type"]) for t in d["range_tombstones"]] == [("r1", "r5", "range-delete")], d["range_tombstones"]
assert es["plain"]["type"] == "put" and es["plain"]["value"] == "p"
assert es["ttl"]["type"] == "put-ttl" and es["ttl"]["value"] == "t" and es["ttl"]["expiry"] > 1700000000
assert es["big"]["value"] == "x" * 2000
assert es["gone"]["type"] == "delete" and "value" not in es["gone"]
assert es["once"]["type"] == "single-delete"
assert d["min_seq"] == 1 and d["max_seq"] == 6
' <<<"$out" || fail "dump-sst of every entry type: $out"
    run dump-sst "$sst"; expect_rc 0
    expect_has $'\trange-delete\tr1\tend=r5' "$out"; expect_has $'\tput-ttl\tttl\tt\texpiry=' "$out"
    wal=$(ls "$W"/k/*.log | tail -1)
    run dump-wal --json "$wal"; expect_rc 0
    json '[e["type"] for r in d["records"] for e in r["entries"]] == ["put", "put-ttl", "put", "delete", "single-delete", "range-delete"]'
    json '[e["seq"] for r in d["records"] for e in r["entries"]] == list(range(7, 13))'
    json 'd["records"][-1]["entries"][0]["end"] == "r5" and d["records"][2]["entries"][0]["value"] == "x" * 2000'
    run verify --db "$W/k"; expect_rc 0
    ;;
txn_records)
    "$FIX" prepare "$DB" || fail "cli_fixture prepare"
    wal=$(ls "$DB"/*.log | tail -1)
    run dump-wal "$wal"; expect_rc 0
    expect_has "prepare xid=xa1 count=1" "$out"; expect_has "prepare xid=xa2 count=1" "$out"
    expect_has $'  -\tput\tdefault\tpending\tx' "$out"
    grep -qE '^record @[0-9]+ \([0-9]+ bytes\): commit xid=xa2 seq=[0-9]+ count=1$' <<<"$out" || fail "no commit record: $out"
    run dump-wal --json "$wal"; expect_rc 0
    json '[r["txn"] for r in d["records"] if "txn" in r] == ["prepare", "prepare", "commit"]'
    json '[r for r in d["records"] if r.get("txn") == "prepare"][0]["entries"][0]["seq"] is None'
    run verify --db "$DB"; expect_rc 0; expect_has "verify: ok" "$out"
    run get --db "$DB" done; expect_rc 0; expect_out "y" "committed through prepare"
    run get --db "$DB" pending; expect_rc 1
    ;;
verify_ok)
    run verify --db "$DB"; expect_rc 0; expect_has "verify: ok" "$out"
    run verify --db "$DB" --verbose; expect_rc 0; expect_has "OK       MANIFEST" "$out"
    run verify --db "$W/none"; expect_rc 2
    mkdir "$W/empty"; run verify --db "$W/empty"; expect_rc 2; expect_has "not a TidesDB database" "$err"
    [ -z "$(ls -A "$W/empty")" ] || fail "verify created files in a directory that holds no database"
    ;;
verify_corrupt)
    sst=$(ls "$DB"/*.sst | head -1); name=$(basename "$sst")
    # Flip one byte of the first data block.
    python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[12]^=0xff; open(p,"wb").write(b)' "$sst"
    run verify --db "$DB"; expect_rc 1
    expect_has "DAMAGED  $name" "$out"; expect_has "verify: 1 damaged file: $name" "$out"
    run verify --db "$DB" --json; expect_rc 1; json 'd["ok"] is False and d["damaged"] == ["'"$name"'"]'
    expect_has "$name" "$err"
    # A MANIFEST that lists a missing table.
    "$FIX" make "$W/db2" >/dev/null
    sst2=$(ls "$W"/db2/*.sst | head -1); rm "$sst2"
    run verify --db "$W/db2"; expect_rc 1; expect_has "$(basename "$sst2"): missing (listed in MANIFEST)" "$out"
    ;;
locked)
    "$FIX" hold "$DB" & holder=$!
    for _ in $(seq 100); do [ -e "$DB.held" ] && break; sleep 0.1; done
    [ -e "$DB.held" ] || fail "holder did not open the database"
    for c in "scan --db $DB" "stats --db $DB" "get --db $DB apple" "put --db $DB a b" "verify --db $DB" \
             "cf list --db $DB" "compact --db $DB" "checkpoint --db $DB $W/copy"; do
        t0=$SECONDS
        # shellcheck disable=SC2086
        out=$(timeout 20 "$T" $c 2>"$W/stderr"); rc=$?; err=$(cat "$W/stderr")
        expect_rc 2 "$c"
        expect_has "database is open in another process ($DB/LOCK is held)" "$err" "$c"
        [ $((SECONDS - t0)) -le 5 ] || fail "$c took $((SECONDS - t0)) s on a locked database"
    done
    [ ! -e "$W/copy" ] || fail "checkpoint wrote a copy of a locked database"
    kill "$holder"; wait "$holder" 2>/dev/null; holder=
    run get --db "$DB" apple; expect_rc 0; expect_out "red" "get after the holder exited"
    ;;
repair)
    run repair --db "$DB"; expect_rc 2; expect_has "not supported" "$err"
    ;;
install)
    [ -n "$BUILD" ] || { fail "install: no build directory given"; exit 1; }
    "${CMAKE:-cmake}" --install "$BUILD" --prefix "$W/inst" >"$W/install.log" 2>&1 || fail "cmake --install: $(cat "$W/install.log")"
    [ -x "$W/inst/bin/tidesdb" ] || fail "tidesdb not installed in bin/"
    T=$W/inst/bin/tidesdb
    run get --db "$DB" cherry; expect_rc 0; expect_out "dark red" "installed tool"
    ;;
*)
    echo "cli_test.sh: unknown case $case_name" >&2; exit 2 ;;
esac

if [ "$failures" -gt 0 ]; then
    echo "cli_test [$case_name]: $failures failures" >&2
    exit 1
fi
echo "cli_test [$case_name]: ok"
