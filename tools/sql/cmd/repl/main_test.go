package main

import (
	"os"
	"strings"
	"testing"
)

func TestSeqNo(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"", -1, false},
		{"0-1-42", 42, false},
		{"1-2-7,0-1-9", 9, false},
		{"1-2-7", -1, false},
		{"0-1", 0, true},
		{"0-1-x", 0, true},
	} {
		got, err := seqNo(c.in)
		if (err != nil) != c.err || (!c.err && got != c.want) {
			t.Errorf("seqNo(%q) = %d, %v; want %d, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

// A decoded binlog (the shape mariadb-binlog -v --base64-output=DECODE-ROWS
// prints): one committed group, one rolled back, and one cut short at the
// end (no COMMIT): only the committed group's ack_a ids count, not ack_b's.
const decoded = `# at 4
#261127 10:00:00 server id 1  end_log_pos 256 CRC32 0x1  GTID 0-1-5 trx
/*!100001 SET @@session.gtid_seq_no=5*//*!*/;
START TRANSACTION
/*!*/;
### INSERT INTO ` + "`repl`.`ack_a`" + `
### SET
###   @1=1000000001
###   @2=0
### INSERT INTO ` + "`repl`.`ack_a`" + `
### SET
###   @1=1000000002
###   @2=0
### INSERT INTO ` + "`repl`.`ack_b`" + `
### SET
###   @1=1000000099
#261127 10:00:00 server id 1  end_log_pos 300 CRC32 0x2 	Xid = 17
COMMIT/*!*/;
#261127 10:00:01 server id 1  end_log_pos 400 CRC32 0x3  GTID 0-1-6 trx
START TRANSACTION
### INSERT INTO ` + "`repl`.`ack_a`" + `
### SET
###   @1=1000000003
ROLLBACK/*!*/;
#261127 10:00:02 server id 1  end_log_pos 500 CRC32 0x4  GTID 0-1-7 trx
START TRANSACTION
### INSERT INTO ` + "`repl`.`ack_a`" + `
### SET
###   @1=1000000004
`

func TestCommittedIDs(t *testing.T) {
	ids, err := committedIDs(strings.NewReader(decoded), "`repl`.`ack_a`")
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || !ids[1000000001] || !ids[1000000002] {
		t.Fatalf("committed ids %v, want 1000000001 and 1000000002 only", ids)
	}
}

func TestTxnIDCycle(t *testing.T) {
	id := txnID(7, 3, 9_999_999)
	if int(id/1_000_000_000) != 7 {
		t.Fatalf("txnID(7, 3, ...) = %d: cycle %d", id, id/1_000_000_000)
	}
	if txnID(1, 0, 1) == txnID(0, 1, 1) {
		t.Fatal("ids of different cycles collide")
	}
}

func TestDiff(t *testing.T) {
	a := map[int64]bool{3: true, 1: true, 2: true}
	b := map[int64]bool{2: true}
	if got := strings.Join(diff(a, b), " "); got != "1 3" {
		t.Fatalf("diff = %q, want \"1 3\"", got)
	}
	if got := joinMax([]string{"a", "b", "c"}, 2); got != "a b (+1 more)" {
		t.Fatalf("joinMax = %q", got)
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil || o.cycles != 3 || o.seed == 0 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	for _, args := range [][]string{
		{"--replica-parallel-mode", "optimistic"},
		{"--replica-parallel-mode", "aggressive", "--sb-test", "oltp_update_index"},
		{"--engine", "InnoDB", "--cycles", "0", "--replica-cycles", "0", "--snapshot=false", "--apply-backlog", "500"},
	} {
		if _, err := parseFlags(args); err != nil {
			t.Errorf("parseFlags(%q): %v", args, err)
		}
	}
	for _, args := range [][]string{
		{"--cycles", "-1"},
		{"--kill-min", "5s", "--kill-max", "2s"},
		{"--clients", "0"},
		{"--port", "65535"},
		{"--cache", "1M"},
		{"--replica-parallel-mode", "parallel"},
		{"--sb-test", "oltp_insert"},
		{"--engine", "MyISAM"},
		{"--engine", "InnoDB"}, // crash cycles and the snapshot are TidesDB's
		{"--apply-backlog", "100", "--apply-modes", "optimistic", "--replica-parallel", "0"},
		{"--apply-modes", "fast"},
		{"--replica-parallel", "-1"},
		{"extra"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

func TestAckSchemaCounters(t *testing.T) {
	s := ackSchema("repl", "TidesDB")
	if strings.Count(s, "ENGINE=TidesDB") != 3 || !strings.Contains(s, "(15,0,0)") {
		t.Fatalf("schema: %s", s)
	}
}

func TestSbTransactions(t *testing.T) {
	out := "SQL statistics:\n    transactions:                        1234   (123.40 per sec.)\n"
	n, r, ok := sbTransactions(out)
	if !ok || n != 1234 || r != 123.4 {
		t.Fatalf("sbTransactions = %d, %v, %v", n, r, ok)
	}
	if _, _, ok := sbTransactions("killed"); ok {
		t.Fatal("no result read as one")
	}
}

func TestReadBackupPos(t *testing.T) {
	dir := t.TempDir()
	p := dir + "/tidesdb_binlog_pos"
	if err := os.WriteFile(p, []byte("# backup point\nlog_bin=ON\ngtid_binlog_pos=0-1-77\nbinlog_file=binlog.000002\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kv, err := readBackupPos(p)
	if err != nil || kv["gtid_binlog_pos"] != "0-1-77" || kv["binlog_file"] != "binlog.000002" {
		t.Fatalf("readBackupPos = %v, %v", kv, err)
	}
	if err := os.WriteFile(p, []byte("log_bin=ON\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readBackupPos(p); err == nil {
		t.Fatal("a position file without gtid_binlog_pos accepted")
	}
	if _, err := readBackupPos(dir + "/none"); err == nil {
		t.Fatal("a missing position file accepted")
	}
}
