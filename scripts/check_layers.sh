#!/usr/bin/env bash
# check_layers.sh: the layering rules of docs/design/conventions.md, checked
# (WiredTiger's dist/s_* idea: a rule no script checks drifts). Fails with
# "file:line: what" for every violation:
#  1. Includes point down the layer order (a file of src/<sub>/ includes
#     headers of its own folder or of folders to its left):
#       util <- env <- wal <- memtable <- cache <- sst <- version <- db <- txn
#     and src/testing/ (test-only code, not in libtidesdb) sits above them
#     all, so no library file may include it.
#  2. A folder's private header (src/<sub>/*_impl.h) is included only from
#     that folder, without exception: src/txn reads the db through its
#     narrow header db/db_txn.h. The db never calls up into txn by name: txn
#     registers callbacks in the db (lock_mgr_free, lock_mgr_counts).
#  3. Outside src/, only the public header (tidesdb/tidesdb.h) is included,
#     except in the white-box directories tests/ (unit tests of internals),
#     fuzz/ (decoders fuzzed directly), tools/stress/ (the offline file
#     checker and the fault env) and tools/cli/offline/ (the admin tool's
#     verify, dump-sst and dump-wal, which decode data files), which may
#     include subsystem headers but, by rule 2, never a *_impl.h.
#  4. No C/C++ source or header is over 1,000 lines. Known debt, capped at
#     its size when the rule came in (the cap may only go down; remove the
#     entry once the file is split): see LINE_DEBT below.
#  5. Every function declared in include/tidesdb/*.h carries TDB_API, and
#     libtidesdb.so (if built: --build DIR, default build/) exports only
#     tdb_* symbols (nm -D --defined-only).
#  6. The files of src/db call each other in one direction: a file calls
#     (or names) only the non-static functions of the files before it in
#     DB_ORDER below, so the file-level call graph has no cycle. Every .c of
#     src/db must be listed. Read from the sources (comments and strings
#     stripped), so it needs no build.
# Usage: check_layers.sh [--root DIR] [--build DIR]
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build=""
while [ $# -gt 0 ]; do
    case "$1" in
        --root) root="$2"; shift 2 ;;
        --build) build="$2"; shift 2 ;;
        *) echo "check_layers.sh: unknown argument '$1' (want --root DIR, --build DIR)" >&2; exit 2 ;;
    esac
done
[ -n "$build" ] || build="$root/build"
cd "$root" || exit 2

ORDER="util env wal memtable cache sst version db txn testing"
WHITEBOX_DIRS="tests fuzz tools/stress tools/cli/offline"
# Rule 6: the files of src/db, lowest first (docs/design/conventions.md).
DB_ORDER="config filename batch direct prepared state cf write_apply switch bg write_stall
write_group write_direct write write_prepared manual cf_api db_iter read open checkpoint"
MAX_LINES=1000
LINE_DEBT="
"

failures=0
fail() { # file line message
    echo "check_layers: $1:$2: $3" >&2
    failures=$((failures + 1))
}

declare -A RANK
i=0
for s in $ORDER; do
    RANK[$s]=$i
    i=$((i + 1))
done

is_whitebox() {
    local d
    for d in $WHITEBOX_DIRS; do
        case "$1" in "$d"/*) return 0 ;; esac
    done
    return 1
}

# Every C/C++ file of ours (not the build trees, not third-party sources).
mapfile -t files < <(find src include tests tools fuzz examples mariadb/ha_tidesdb \
    -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cpp' -o -name '*.hpp' \) \
    2>/dev/null | LC_ALL=C sort)
[ "${#files[@]}" -gt 0 ] || { echo "check_layers: no sources under $root" >&2; exit 2; }

for d in src/*/; do
    d="${d%/}"
    d="${d#src/}"
    [ -n "${RANK[$d]:-}" ] || fail "src/$d" 0 "folder not in the declared layer order ($ORDER)"
done

declare -A LINES_OF
while read -r n f; do
    [ "$f" = total ] || LINES_OF[$f]=$n
done < <(wc -l "${files[@]}")

for f in "${files[@]}"; do
    # Rules 1-3: the quoted includes naming a folder of src/.
    while IFS=: read -r line target; do
        sub="${target%%/*}"
        [ -d "src/$sub" ] || continue # not one of ours (tidesdb/tidesdb.h, local headers)
        case "$f" in
            src/*)
                own="${f#src/}"
                own="${own%%/*}"
                r_own="${RANK[$own]:-}"
                r_dep="${RANK[$sub]:-}"
                if [ -n "$r_own" ] && [ -n "$r_dep" ] && [ "$r_dep" -gt "$r_own" ]; then
                    fail "$f" "$line" "upward include of \"$target\": $own may include only $own and the layers to its left in: $ORDER"
                fi
                ;;
            *)
                if ! is_whitebox "$f"; then
                    fail "$f" "$line" "private header \"$target\" included outside src/ (only tidesdb/tidesdb.h; white-box dirs: $WHITEBOX_DIRS)"
                fi
                ;;
        esac
        case "$target" in
            *_impl.h)
                if [ "${f#src/$sub/}" = "$f" ]; then
                    fail "$f" "$line" "\"$target\" is private to src/$sub/"
                fi
                ;;
        esac
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*"' "$f" |
        sed -E 's/^([0-9]+):[^"]*"([^"]*)".*/\1:\2/')

    # Rule 4: size.
    n=${LINES_OF[$f]}
    if [ "$n" -gt "$MAX_LINES" ]; then
        cap=$(awk -v f="$f" '$1 == f { print $2 }' <<<"$LINE_DEBT")
        if [ -z "$cap" ]; then
            fail "$f" "$((MAX_LINES + 1))" "$n lines, over the limit of $MAX_LINES: split it by concern"
        elif [ "$n" -gt "$cap" ]; then
            fail "$f" "$((cap + 1))" "$n lines: a file on the known-debt list grew past its cap of $cap"
        fi
    fi
done

# Rule 6: no call from a file of src/db to one after it in DB_ORDER.
if [ -d src/db ]; then
    while IFS= read -r msg; do
        fail "${msg%%|*}" "$(cut -d'|' -f2 <<<"$msg")" "${msg#*|*|}"
    done < <(DB_ORDER="$(echo $DB_ORDER)" perl -e '
        my @order = split " ", $ENV{DB_ORDER};
        my %rank; @rank{@order} = (0 .. $#order);
        my (%text, %def);
        for my $f (sort glob("src/db/*.c")) {
            my ($base) = $f =~ m{([^/]+)\.c$};
            local $/; open(my $fh, "<", $f) or next; my $t = <$fh>; close $fh;
            # Strip comments (keeping line breaks), then strings and chars.
            $t =~ s{/\*.*?\*/}{ (my $c = $&) =~ s/[^\n]//g; $c }gse;
            $t =~ s{//[^\n]*}{}g;
            $t =~ s{"(?:\\.|[^"\\\n])*"}{""}g;
            $t =~ s{\x27(?:\\.|[^\x27\\\n])+\x27}{0}g;
            $text{$base} = $t;
            if (!defined $rank{$base}) {
                print "$f|0|not in the order of src/db (DB_ORDER in scripts/check_layers.sh): place it\n";
                next;
            }
            # Non-static definitions at column 0: "type name(params) {".
            while ($t =~ m{^(?!static\b)(?!typedef\b)[A-Za-z_][\w \t\*]*?\b(\w+)\s*\([^;{}]*\)\s*\{}mg) {
                $def{$1} = $base;
            }
        }
        for my $base (sort keys %text) {
            next unless defined $rank{$base};
            my $n = 0;
            for my $line (split /\n/, $text{$base}, -1) {
                $n++;
                while ($line =~ m{\b([A-Za-z_]\w*)\b}g) {
                    my $d = $def{$1};
                    next unless defined $d && $d ne $base && $rank{$d} > $rank{$base};
                    print "src/db/$base.c|$n|uses $1 of src/db/$d.c, which comes after $base in the order of src/db ($ENV{DB_ORDER}): a cycle between files\n";
                }
            }
        }')
fi

# Rule 5a: every public declaration is exported.
for h in include/tidesdb/*.h; do
    while IFS=: read -r line text; do
        fail "$h" "$line" "public function declared without TDB_API: $text"
    done < <(grep -nE '^[A-Za-z_][A-Za-z0-9_ ]*[ *]tdb_[a-z0-9_]+\(' "$h" | grep -v '^[0-9]*:TDB_API ')
done

# Rule 5b: the shared library's exports.
lib="$build/libtidesdb.so"
if [ -e "$lib" ]; then
    while read -r sym; do
        [ -n "$sym" ] || continue
        fail "$lib" 0 "exports $sym: only tdb_* (TDB_API in include/tidesdb/tidesdb.h) may be exported"
    done < <(nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | grep -v '^tdb_' || true)
else
    echo "check_layers: note: $lib not built, exported symbols not checked" >&2
fi

if [ "$failures" -gt 0 ]; then
    echo "check_layers: FAILED ($failures violations)" >&2
    exit 1
fi
echo "check_layers: ok (${#files[@]} files)"
