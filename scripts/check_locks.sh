#!/usr/bin/env bash
# Check the lock table of docs/design/locks.md ("Which lock guards each
# shared field") against the sources, so a renamed or removed field cannot
# stay in the table: every identifier in backticks in a row's columns before
# the last ("guarded by") must occur, as a word, in the sources the row is
# about: the path a row names (`db/direct.c`, `src/env/env_posix.c`), else
# the path in its section's heading (`src/db/db_impl.h`, `src/version/`).
# Prints each miss as doc:line and exits 1 if there is one.
#   check_locks.sh [--root DIR] [--doc FILE]
#   check_locks.sh --selftest   (the check fails on a table naming a field
#                                that does not exist)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
doc=""
selftest=0
while [ $# -gt 0 ]; do
    case "$1" in
        --root) root="$2"; shift 2 ;;
        --doc) doc="$2"; shift 2 ;;
        --selftest) selftest=1; shift ;;
        *) echo "check_locks.sh: unknown argument '$1' (want --root DIR, --doc FILE, --selftest)" >&2; exit 2 ;;
    esac
done
doc="${doc:-$root/docs/design/locks.md}"

if [ "$selftest" = 1 ]; then
    tmp="$(mktemp)"
    trap 'rm -f "$tmp"' EXIT
    bash "$0" --root "$root" --doc "$doc" >/dev/null || { echo "check_locks: selftest: the real table fails" >&2; exit 1; }
    sed 's/| `cfs`, `ncf_slots`/| `cfs`, `no_such_field_h19`/' "$doc" >"$tmp"
    grep -q no_such_field_h19 "$tmp" || { echo "check_locks: selftest: the cfs row is gone from $doc" >&2; exit 1; }
    if out="$(bash "$0" --root "$root" --doc "$tmp" 2>&1)"; then
        echo "check_locks: selftest: a table naming no_such_field_h19 passed" >&2
        exit 1
    fi
    grep -q "no_such_field_h19" <<<"$out" || { echo "check_locks: selftest: unexpected message: $out" >&2; exit 1; }
    echo "check_locks: selftest ok"
    exit 0
fi

# The source path a backticked token names, if it names one: src/X or X under src/.
path_of() {
    local t="$1"
    case "$t" in */*) ;; *) return 1 ;; esac
    [ -e "$root/$t" ] && { echo "$root/$t"; return 0; }
    [ -e "$root/src/$t" ] && { echo "$root/src/$t"; return 0; }
    return 1
}

misses=0
rows=0
in_table=0
section_src=""
n=0
while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    case "$line" in
        "## Which lock guards each shared field"*) in_table=1; section_src=""; continue ;;
        "## "*) in_table=0; continue ;;
        "### "*)
            section_src=""
            for t in $(grep -o '`[^`]*`' <<<"$line" | tr -d '`'); do
                p="$(path_of "$t")" && section_src="$p"
            done
            continue ;;
    esac
    [ "$in_table" = 1 ] || continue
    case "$line" in "|"*) ;; *) continue ;; esac
    case "$line" in "|---"* | "| fields |"* | "| struct |"* | "| where |"*) continue ;; esac
    # The columns before the last.
    body="${line#|}"
    body="${body%|}"
    cols="${body%|*}"
    src="$section_src"
    tokens="$(grep -o '`[^`]*`' <<<"$cols" | tr -d '`' || true)"
    for t in $tokens; do
        p="$(path_of "$t")" && src="$p"
    done
    [ -n "$src" ] || { echo "$doc:$n: no source path for this row (its section heading names none)"; misses=$((misses + 1)); continue; }
    rows=$((rows + 1))
    for t in $tokens; do
        path_of "$t" >/dev/null && continue
        # ctr.* -> ctr; stripes[i].buckets -> buckets; *pending -> pending.
        id="${t%.\*}"
        id="${id##*.}"
        id="${id#\*}"
        id="${id%%[*}"
        [[ "$id" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
        if ! grep -rqw -- "$id" "$src"; then
            echo "$doc:$n: '$t' does not occur in ${src#"$root"/}"
            misses=$((misses + 1))
        fi
    done
done <"$doc"

[ "$rows" -gt 0 ] || { echo "check_locks: no table rows found in $doc" >&2; exit 1; }
if [ "$misses" -gt 0 ]; then
    echo "check_locks: $misses name(s) of $doc not found in the sources" >&2
    exit 1
fi
echo "check_locks: ok ($rows rows)"
