package target

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Target{
		"127.0.0.1:3520": {Host: "127.0.0.1", Port: 3520, User: "root"},
		"db.example:3306,user=bench,password=a=b": {Host: "db.example", Port: 3306, User: "bench", Password: "a=b"},
		"/tmp/x.sock,password=s":                  {Socket: "/tmp/x.sock", User: "root", Password: "s"},
		"[::1]:3307":                              {Host: "[::1]", Port: 3307, User: "root"},
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "host", ":3306", "host:0", "host:70000", "host:x", "h:1,usr=a", "h:1,user=",
		"h:1,user=a,user=b", "h:1,secret"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestDSNAndString(t *testing.T) {
	tg, _ := Parse("127.0.0.1:3520,user=u,password=pw")
	if d := tg.DSN("tpcc"); !strings.HasPrefix(d, "u:pw@tcp(127.0.0.1:3520)/tpcc?") {
		t.Errorf("DSN %q", d)
	}
	if s := tg.String(); strings.Contains(s, "pw") || s != "127.0.0.1:3520 as u" {
		t.Errorf("String %q", s)
	}
	if !tg.TCP() {
		t.Error("host:port is not TCP")
	}
	sk, _ := Parse("/run/m.sock")
	if d := sk.DSN(""); !strings.HasPrefix(d, "root@unix(/run/m.sock)/?") || sk.TCP() {
		t.Errorf("socket DSN %q", d)
	}
}
