# Shared functions of the Spider sharding scripts (issue #21). Sourced.
#
# Topology: SHARDS backend servers b1..bN, each a throw-away mariadbd with
# the TideSQL plugin (TidesDB tables), and a front server "front": its own
# mariadbd with Debian's Spider plugin (mariadb-plugin-spider, pinned with
# the server by ../setup.sh), whose tables are ENGINE=SPIDER, partitioned
# by a key, one partition per backend (COMMENT='srv "sI"'). A "plain"
# server (no Spider) is the baseline. Every server is started by
# ../server.sh (data directory, my.cnf, pid file, allocator check) with
# its own directory under $SPIDER_DIR and its own port:
#   front  $SPIDER_PORT          (default 3520)
#   bI     $SPIDER_PORT + I      (I = 1..4)
#   plain  $SPIDER_PORT + 9
# The front and the plain server listen on 127.0.0.1, backend bI on
# 127.0.0.(I+1): Spider's record of an XA transaction's members
# (mysql.spider_xa_member) tells members apart by host only, not port, so
# two backends on one address fail every cross-shard XA commit with
# "This xid member already exists" (error 12606). The front reaches the
# backends over TCP as root.
spider_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$spider_here/../common.sh"

SPIDER_DIR="${SPIDER_DIR:-$TIDESQL_ROOT/build/spider}"
SPIDER_PORT="${SPIDER_PORT:-3520}"
SPIDER_STARTED=()   # servers this run started (stopped by spider_stop_all)

spider_port() { # name
  case "$1" in
    front) echo "$SPIDER_PORT" ;;
    plain) echo $((SPIDER_PORT + 9)) ;;
    b[1-4]) echo $((SPIDER_PORT + ${1#b})) ;;
    *) die "spider: unknown server '$1' (front, plain, b1..b4)" ;;
  esac
}

spider_host() { # name
  case "$1" in
    b[1-4]) echo "127.0.0.$((${1#b} + 1))" ;;
    *) echo 127.0.0.1 ;;
  esac
}

# srv NAME server.sh-command [args]: ../server.sh for server NAME.
srv() {
  local name="$1" port
  shift
  port="$(spider_port "$name")" || exit 1
  TIDESQL_SERVER_DIR="$SPIDER_DIR/$name" TIDESQL_SOCKET="$SPIDER_DIR/$name/mysqld.sock" \
    TIDESQL_PORT="$port" TIDESQL_NO_ROCKSDB=1 bash "$spider_here/../server.sh" "$@"
}

# q NAME [client args]: the mariadb client on server NAME.
q() { local name="$1"; shift; srv "$name" client "$@"; }

# Spider's plugin must sit in the plugin directory the servers use
# (build_plugin.sh links Debian's plugins there when it builds; Spider
# may have been installed after that build).
spider_check_plugin() {
  check_server_version
  [ -e "$TIDESQL_PLUGIN_DIR/ha_tidesdb.so" ] || die "no plugin: run scripts/mariadb/build_plugin.sh"
  if [ ! -e "$TIDESQL_PLUGIN_DIR/ha_spider.so" ]; then
    [ -e /usr/lib/mysql/plugin/ha_spider.so ] ||
      die "Spider is not installed (no /usr/lib/mysql/plugin/ha_spider.so): run scripts/mariadb/setup.sh as root (installs mariadb-plugin-spider=$MARIADB_PIN_VERSION)"
    ln -sfn /usr/lib/mysql/plugin/ha_spider.so "$TIDESQL_PLUGIN_DIR/ha_spider.so"
  fi
}

# spider_run NAME [mariadbd options]: starts server NAME on its data
# directory as it is (a restart after a kill, say): the front with Spider
# (front.cnf), a backend on its own address; temporary tables in the
# server's own directory, not in /tmp shared with other servers.
spider_run() {
  local name="$1" cnf=()
  shift
  mkdir -p "$SPIDER_DIR/$name/tmp"
  if [ "$name" = front ]; then
    printf '[mysqld]\nplugin-load-add=ha_spider.so\n' >"$SPIDER_DIR/front.cnf"
    cnf=(--cnf "$SPIDER_DIR/front.cnf")
  fi
  srv "$name" start "${cnf[@]}" --max-connections=500 --bind-address="$(spider_host "$name")" \
    --tmpdir="$SPIDER_DIR/$name/tmp" "$@" >/dev/null
}

# spider_start NAME [mariadbd options]: a fresh server (data directory
# wiped), stopped by spider_stop_all.
spider_start() {
  local name="$1"
  srv "$name" wipe >/dev/null
  spider_run "$@"
  SPIDER_STARTED+=("$name")
  if [ "$name" = front ]; then
    [ "$(q front -N -e "SELECT SUPPORT FROM information_schema.ENGINES WHERE ENGINE='SPIDER'")" = YES ] ||
      die "the front server has no SPIDER engine (log $SPIDER_DIR/front/error.log)"
  fi
}

# spider_stop_all: stops every server spider_start started (by pid file).
spider_stop_all() {
  local n
  for n in "${SPIDER_STARTED[@]}"; do srv "$n" stop >/dev/null 2>&1 || true; done
  SPIDER_STARTED=()
}

# spider_topology SHARDS DB [front options]: starts backends b1..bSHARDS
# and the front, creates DB on each, and on the front one Spider server
# entry sI per backend (CREATE SERVER ... DATABASE DB).
spider_topology() {
  local n="$1" db="$2" i
  shift 2
  [ "$n" -ge 1 ] && [ "$n" -le 4 ] || die "SHARDS=$n: want 1 to 4"
  spider_check_plugin
  for i in $(seq 1 "$n"); do
    spider_start "b$i"
    q "b$i" -e "CREATE DATABASE \`$db\`"
  done
  spider_start front "$@"
  q front -e "CREATE DATABASE \`$db\`"
  for i in $(seq 1 "$n"); do
    q front -e "CREATE SERVER s$i FOREIGN DATA WRAPPER mysql OPTIONS (HOST '$(spider_host "b$i")', PORT $(spider_port "b$i"), USER 'root', PASSWORD '', DATABASE '$db')"
  done
}

# range_bounds TOTAL N: the N-1 upper bounds (exclusive) that cut keys
# 1..TOTAL into N contiguous ranges as even as integers allow.
range_bounds() {
  local total="$1" n="$2" i
  for i in $(seq 1 $((n - 1))); do echo $((1 + (total * i + n - 1) / n)); done
}

# spider_table SHARDS DB TABLE COLUMN TOTAL: creates the Spider table DB.TABLE
# on the front with backend b1's definition of DB.TABLE (which every
# backend holds), partitioned BY RANGE (COLUMN) into SHARDS ranges of
# 1..TOTAL, partition I on backend sI.
spider_table() {
  local n="$1" db="$2" t="$3" col="$4" total="$5" def parts="" i=1 b
  def="$(q b1 -N -B --raw "$db" -e "SHOW CREATE TABLE \`$t\`" | cut -f2-)"
  [ -n "$def" ] || die "spider: backend b1 has no table $db.$t"
  def="$(sed -E 's/ENGINE=TidesDB/ENGINE=SPIDER/; s/ AUTO_INCREMENT=[0-9]+//' <<<"$def")"
  grep -q 'ENGINE=SPIDER' <<<"$def" || die "spider: $db.$t on b1 is not a TidesDB table"
  for b in $(range_bounds "$total" "$n"); do
    parts+="PARTITION p$i VALUES LESS THAN ($b) COMMENT='srv \"s$i\"', "
    i=$((i + 1))
  done
  parts+="PARTITION p$i VALUES LESS THAN (MAXVALUE) COMMENT='srv \"s$i\"'"
  q front "$db" -e "$def COMMENT='wrapper \"mysql\", table \"$t\"' PARTITION BY RANGE (\`$col\`) ($parts)" ||
    die "spider: creating the Spider table $db.$t failed"
}

# spider_rows NAME DB TABLE: rows of DB.TABLE on server NAME.
spider_rows() { q "$1" -N "$2" -e "SELECT COUNT(*) FROM \`$3\`"; }

# The SQL harnesses (tools/sql: tpcc, sqlbench) measure the front, or the
# plain server, as an external server (--target / TARGET): they start,
# configure and stop nothing; these scripts own the servers.
spider_harnesses() {
  ensure_sql_harnesses
  export TIDESQL_ROOT
}

# csv_get FILE COLUMN [KEYCOLUMN KEY]: COLUMN of the first row of the
# harness CSV FILE (whose KEYCOLUMN is KEY). Plain CSV: the harness quotes
# only fields with commas, and the columns read here have none.
csv_get() {
  awk -F, -v col="$2" -v kc="${3:-}" -v key="${4:-}" '
    NR == 1 { for (i = 1; i <= NF; i++) { if ($i == col) c = i; if ($i == kc) k = i }; next }
    c && (kc == "" || $k == key) { print $c; exit }' "$1"
}

# spider_result BENCH THROUGHPUT P95 P99 LOAD_S CHECK: one row of this
# run's results.csv (header: bench,shards,size,threads,time,xa,...).
spider_result() {
  local f="$SPIDER_DIR/out/results.csv"
  [ -s "$f" ] || echo "bench,shards,size,threads,time,spider_internal_xa,throughput,p95_ms,p99_ms,load_s,check" >"$f"
  echo "$1,$SHARDS,$RESULT_SIZE,$THREADS,$TIME,$([ "$SHARDS" = 0 ] && echo - || echo "$XA"),$2,$3,$4,$5,$6" >>"$f"
}

# spider_table_md RESULTS_CSV: the results as a Markdown table, each row's
# throughput (TPC-C: NOPM = tpmC; sysbench: tps) also as a ratio to the
# plain server's (shards 0) of the same bench in the same file.
spider_table_md() {
  awk -F, '
    NR == 1 { next }
    { n++; for (i = 1; i <= NF; i++) r[n, i] = $i; if ($2 == 0) plain[$1] = $7 }
    END {
      print "| bench | servers | spider_internal_xa | throughput | p95 ms | p99 ms | vs plain | load s | check |"
      print "|---|---|---|---|---|---|---|---|---|"
      for (k = 1; k <= n; k++) {
        srv = r[k, 2] == 0 ? "1 plain TidesDB server" : "Spider, " r[k, 2] " shard" (r[k, 2] > 1 ? "s" : "")
        ratio = (plain[r[k, 1]] > 0) ? sprintf("%.2fx", r[k, 7] / plain[r[k, 1]]) : "-"
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r[k, 1], srv, r[k, 6], r[k, 7], r[k, 8], r[k, 9], ratio, r[k, 10], r[k, 11]
      }
    }' "$1"
}
