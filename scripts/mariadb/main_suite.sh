#!/usr/bin/env bash
# MariaDB's own `main` mtr suite (package mariadb-test, the installed
# /usr/share/mysql/mysql-test/main) with TidesDB as the default engine.
#   main_suite.sh [--quick] [--record] [mtr options] [test ...]
# Runs the tests of mariadb/mysql-test/main_suite.list (with --quick only
# those marked `quick`; or the tests named) and compares each outcome with
# the status the list expects:
#   pass     the test passes against MariaDB's own result file
#   differs  it passes against MariaDB's result patched with
#            mariadb/mysql-test/main_suite/<test>.rdiff (TidesDB's output
#            differs only in engine-specific ways, reason in the list)
#   fail     it stops with the error in main_suite/<test>.fail (a feature
#            TidesDB or any transactional engine lacks, or a known bug)
#   unstable as differs, but the plan of some query depends on row estimates
#            that vary between runs: a result mismatch is tolerated, only
#            an error, crash or warning in the server log counts
#   exclude  not run (reason in the list)
# Exits non-zero when a test does worse than expected (a pass/differs test
# fails, a fail test stops at another error or crashes); reports tests that
# do better (a fail test passes, a differs test matches MariaDB's result).
# --record: rewrites the .rdiff/.fail files of the tests run from their
# output now and prints the status each one should have in the list.
# Work directory build/mtr_main (MTR_MAIN_WORK): the suite is assembled in
# suite/main_tidesdb (t -> the installed main/, results patched), var/ is
# mtr's vardir, results.txt the verdicts. mtr picks free ports itself
# (MTR_BUILD_THREAD=auto); MTR_PARALLEL (default 2) workers.
set -euo pipefail
. "$(dirname "$0")/common.sh"

LIST="$TIDESQL_ROOT/mariadb/mysql-test/main_suite.list"
EXP_DIR="$TIDESQL_ROOT/mariadb/mysql-test/main_suite"
MTR_DIR=/usr/share/mysql/mysql-test
WORK="${MTR_MAIN_WORK:-$TIDESQL_ROOT/build/mtr_main}"
SUITE="$WORK/suite/main_tidesdb"

quick=0 record=0
mtr_opts=() tests=()
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    --record) record=1 ;;
    -*) mtr_opts+=("$a") ;;
    *) tests+=("$a") ;;
  esac
done

check_server_version
[ -e "$TIDESQL_PLUGIN_DIR/ha_tidesdb.so" ] || die "no plugin: run scripts/mariadb/build_plugin.sh"
[ -x "$MTR_DIR/mtr" ] && [ -d "$MTR_DIR/main" ] || die "mtr or its main suite not found in $MTR_DIR: run scripts/mariadb/setup.sh (mariadb-test)"
getent hosts localhost >/dev/null || die "'localhost' does not resolve: add it to /etc/hosts"
command -v patch >/dev/null || die "patch(1) not found: apt-get install patch"
case "$SUITE" in *-*) die "mtr breaks on a '-' in the suite path ($SUITE): set MTR_MAIN_WORK" ;; esac
[ -f "$LIST" ] || die "no list $LIST"

# Row estimates (records_in_range, cardinality) come from the library's
# approximate counts and vary a little from run to run: outputs are also
# compared with the estimate columns of EXPLAIN/ANALYZE masked (tabular:
# rows, and filtered of EXPLAIN EXTENDED/ANALYZE; FORMAT=JSON: rows,
# filtered, cost and the like). A different plan still differs.
mask_estimates() { # file
  awk -F'\t' 'BEGIN { OFS = "\t" }
    NF >= 10 && $1 ~ /^[0-9]+$/ && $2 ~ /^(SIMPLE|PRIMARY|SUBQUERY|DEPENDENT SUBQUERY|DERIVED|UNION|DEPENDENT UNION|UNION RESULT|MATERIALIZED|RECURSIVE UNION|LATERAL DERIVED|UNCACHEABLE SUBQUERY|UNCACHEABLE UNION)$/ {
      $9 = "#"; if (NF == 11) $10 = "#"; if (NF == 13) $11 = "#" }
    { print }' "$1" |
    sed -E 's/"(rows|filtered|cost|read_time|records|selectivity_pct|rows_for_plan|cost_for_plan|index_scan_time|records_read|fanout|shortcut_cost_with_risk|found_records|index_only_cost|chosen_cost)": [0-9.e+-]+/"\1": #/g'
}

# The list: "<test> <status> [quick]  # reason".
declare -A expect
order=()
while read -r name st rest; do
  case "$name" in ''|'#'*) continue ;; esac
  case "$st" in pass|differs|unstable|fail|exclude) ;; *) die "$LIST: $name: unknown status '$st'" ;; esac
  expect[$name]=$st
  if [ ${#tests[@]} = 0 ] && [ "$st" != exclude ]; then
    if [ $quick = 0 ] || [[ "$rest" =~ ^quick ]]; then order+=("$name"); fi
  fi
done <"$LIST"
if [ ${#tests[@]} -gt 0 ]; then
  for t in "${tests[@]}"; do
    [ -f "$MTR_DIR/main/$t.test" ] || die "no test main/$t.test"
    order+=("$t")
  done
fi
[ ${#order[@]} -gt 0 ] || die "no tests selected"

# Assemble the suite: the installed main/ as t/, its suite.pm (combination
# rules), our server options and the expected results.
rm -rf "$SUITE"
mkdir -p "$SUITE/r"
ln -s "$MTR_DIR/main" "$SUITE/t"
ln -s "$MTR_DIR/suite.pm" "$SUITE/suite.pm"
echo "--plugin-load-add=ha_tidesdb.so --plugin-maturity=gamma --default-storage-engine=TidesDB --default-tmp-storage-engine=MyISAM" >"$SUITE/suite.opt"
for t in "${order[@]}"; do
  src="$MTR_DIR/main/$t.result"
  [ -f "$src" ] || die "no result main/$t.result"
  if [ $record = 0 ] && { [ "${expect[$t]:-}" = differs ] || [ "${expect[$t]:-}" = unstable ]; }; then
    [ -f "$EXP_DIR/$t.rdiff" ] || die "$t: status ${expect[$t]} but no $EXP_DIR/$t.rdiff (run with --record $t)"
    patch -s -o "$SUITE/r/$t.result" "$src" <"$EXP_DIR/$t.rdiff" ||
      die "$t: $t.rdiff does not apply to main/$t.result (another MariaDB version? re-record)"
  else
    cp "$src" "$SUITE/r/$t.result"
  fi
done

echo "main_suite: ${#order[@]} tests, work dir $WORK"
t0=$SECONDS
set +e
(cd "$MTR_DIR" && ./mtr --suite="$SUITE" --vardir="$WORK/var" \
   --mysqld=--plugin-dir="$TIDESQL_PLUGIN_DIR" --parallel="${MTR_PARALLEL:-2}" \
   --force --max-test-fail=0 --retry=0 "${mtr_opts[@]}" "${order[@]}") >"$WORK/mtr.out" 2>&1
set -e
elapsed=$((SECONDS - t0))

# Outcome per test: status and, for a failure, mysqltest's error (paths of
# this work dir replaced, so it can be compared between runs).
declare -A got why
while IFS=$'\t' read -r name st msg; do
  got[$name]=$st
  why[$name]=$msg
done < <(awk -v work="$WORK" -v suite="$SUITE" '
  function flush() { if (name != "") print name "\t" st "\t" msg }
  /main_tidesdb\.[^ ]+ .*\[ (pass|fail|skipped|disabled) \]/ {
    flush(); n = $1; sub(/.*main_tidesdb\./, "", n); name = n
    st = $0; sub(/.*\[ /, "", st); sub(/ \].*/, "", st); msg = ""
    if (st == "skipped") { msg = $0; sub(/.*skipped \] */, "", msg) }
    else if (st != "pass") { r = $0; sub(/.*\] */, "", r); if (r != "" && r !~ /^[0-9]+$/) msg = r }
    next }
  name != "" && msg == "" && /^(mysqltest: |At line |Result (length|content) mismatch|Server .*failed|.*Found warnings|.*timed out|.*Lost connection)/ {
    if (/^mysqltest: In included file/) next
    msg = $0
    gsub(suite, "SUITE", msg); gsub(work, "WORK", msg); gsub(/WORK\/var\/[0-9]+\//, "WORK/var/N/", msg) }
  END { flush() }' "$WORK/mtr.out")

worse=0 better=0
declare -A count
: >"$WORK/results.txt"
for t in "${order[@]}"; do
  e="${expect[$t]:-none}" g="${got[$t]:-none}" w="${why[$t]:-}" verdict=""
  if [ $record = 1 ]; then
    if [ "$g" = pass ]; then
      rm -f "$EXP_DIR/$t.rdiff" "$EXP_DIR/$t.fail"; verdict="record: pass"
    elif [ -f "$SUITE/r/$t.reject" ]; then
      mkdir -p "$EXP_DIR"
      diff -U1 --label "main/$t.result" --label "main/$t.reject" "$MTR_DIR/main/$t.result" "$SUITE/r/$t.reject" >"$EXP_DIR/$t.rdiff" || true
      rm -f "$EXP_DIR/$t.fail"; verdict="record: differs ($(grep -c '^[-+][^-+]' "$EXP_DIR/$t.rdiff") lines)"
    elif [ "$g" = fail ]; then
      mkdir -p "$EXP_DIR"
      echo "$w" >"$EXP_DIR/$t.fail"; rm -f "$EXP_DIR/$t.rdiff"; verdict="record: fail ($w)"
    else
      verdict="record: $g (nothing recorded)"
    fi
  else
    case "$e:$g" in
      pass:pass|differs:pass|unstable:pass) verdict=ok ;;
      unstable:fail) if [[ "$w" =~ ^Result\ (length|content)\ mismatch ]]; then verdict="ok (unstable: output differs)"
                     else verdict="WORSE: $g (expected $e): $w"; worse=$((worse + 1)); fi ;;
      pass:fail|differs:fail) if [ -f "$SUITE/r/$t.reject" ] &&
                                 cmp -s <(mask_estimates "$SUITE/r/$t.reject") <(mask_estimates "$SUITE/r/$t.result"); then
                                verdict="ok (row estimates differ)"
                              elif [ "$e" = differs ] && [ -f "$SUITE/r/$t.reject" ] && cmp -s "$SUITE/r/$t.reject" "$MTR_DIR/main/$t.result"; then
                                verdict="BETTER: matches MariaDB's result (drop $t.rdiff)"; better=$((better + 1))
                              else
                                verdict="WORSE: $g (expected $e): $w"; worse=$((worse + 1))
                              fi ;;
      fail:pass) verdict="BETTER: passes (expected fail)"; better=$((better + 1)) ;;
      fail:fail)
        if [ "$w" = "$(cat "$EXP_DIR/$t.fail" 2>/dev/null)" ]; then verdict=ok
        else verdict="WORSE: fails differently: $w"; worse=$((worse + 1)); fi ;;
      *:skipped) verdict="skipped: $w" ;;
      none:*) verdict="not in the list: $g $w" ;;
      *) verdict="WORSE: $g (expected $e): $w"; worse=$((worse + 1)) ;;
    esac
  fi
  count[$g]=$(( ${count[$g]:-0} + 1 ))
  printf '%-28s %-8s %-8s %s\n' "$t" "$e" "$g" "$verdict" >>"$WORK/results.txt"
done

grep -v ' ok$' "$WORK/results.txt" || true
n_pass=0 n_differs=0 n_unstable=0 n_fail=0
for t in "${order[@]}"; do
  case "${expect[$t]:-}" in pass) n_pass=$((n_pass + 1)) ;; differs) n_differs=$((n_differs + 1)) ;; unstable) n_unstable=$((n_unstable + 1)) ;; fail) n_fail=$((n_fail + 1)) ;; esac
done
n_excl=0
for t in "${!expect[@]}"; do [ "${expect[$t]}" = exclude ] && n_excl=$((n_excl + 1)); done
echo "main_suite: ${#order[@]} tests in ${elapsed} s: mtr: ${count[pass]:-0} passed, ${count[fail]:-0} failed, ${count[skipped]:-0} skipped (list: $n_pass pass, $n_differs differs, $n_unstable unstable, $n_fail fail; $n_excl excluded)"
echo "main_suite: $worse worse than expected, $better better (verdicts in $WORK/results.txt, mtr output in $WORK/mtr.out)"
if [ $record = 1 ]; then
  echo "main_suite: recorded into $EXP_DIR; set the statuses in $LIST"
  exit 0
fi
[ $worse = 0 ]
