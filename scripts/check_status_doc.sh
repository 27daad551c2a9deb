#!/usr/bin/env bash
# Check that docs/design/tidesql.md documents exactly the tidesdb_* status
# variables the plugin exports: the names in the first column of the doc's
# status table (rows starting "| `tidesdb_") against the names the mtr test
# `status` lists (mariadb/mysql-test/tidesdb/r/status.result, recorded from
# a running server, so a new variable reaches it through the test's result
# diff). Prints each name found on one side only and exits 1 if any.
#   check_status_doc.sh [--root DIR]
#   check_status_doc.sh --selftest  (a doc missing a name, and a doc naming
#                                    one that does not exist, both fail)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
doc=""
selftest=0
while [ $# -gt 0 ]; do
    case "$1" in
        --root) root="$2"; shift 2 ;;
        --doc) doc="$2"; shift 2 ;;
        --selftest) selftest=1; shift ;;
        *) echo "check_status_doc.sh: unknown argument '$1' (want --root DIR, --selftest)" >&2; exit 2 ;;
    esac
done
doc="${doc:-$root/docs/design/tidesql.md}"
result="$root/mariadb/mysql-test/tidesdb/r/status.result"

if [ "$selftest" = 1 ]; then
    tmp="$(mktemp)"
    trap 'rm -f "$tmp"' EXIT
    bash "$0" --root "$root" >/dev/null || { echo "check_status_doc: selftest: the real doc fails" >&2; exit 1; }
    grep -v '^| `tidesdb_commits`' "$doc" >"$tmp"
    if bash "$0" --root "$root" --doc "$tmp" >/dev/null 2>&1; then
        echo "check_status_doc: selftest: a doc without tidesdb_commits passed" >&2
        exit 1
    fi
    sed 's/^| `tidesdb_commits`/| `tidesdb_no_such_var`/' "$doc" >"$tmp"
    if bash "$0" --root "$root" --doc "$tmp" >/dev/null 2>&1; then
        echo "check_status_doc: selftest: a doc naming tidesdb_no_such_var passed" >&2
        exit 1
    fi
    echo "check_status_doc: selftest ok"
    exit 0
fi

documented="$(grep -o '^| `tidesdb_[a-z0-9_]*`' "$doc" | sed 's/^| `//; s/`$//' | LC_ALL=C sort -u)"
exported="$(awk '/^VARIABLE_NAME$/ {on = 1; next} on && /^TIDESDB_/ {print tolower($0); next} on {exit}' "$result" |
    LC_ALL=C sort -u)"
[ -n "$exported" ] || { echo "check_status_doc: no variable list in $result" >&2; exit 1; }
missing="$(LC_ALL=C comm -13 <(echo "$documented") <(echo "$exported"))"
extra="$(LC_ALL=C comm -23 <(echo "$documented") <(echo "$exported"))"
rc=0
for v in $missing; do echo "check_status_doc: $v is exported but not documented in $doc"; rc=1; done
for v in $extra; do echo "check_status_doc: $v is documented in $doc but not exported"; rc=1; done
[ "$rc" = 0 ] && echo "check_status_doc: ok ($(echo "$exported" | wc -l) variables)"
exit "$rc"
