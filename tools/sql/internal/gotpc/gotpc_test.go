package gotpc

import (
	"strings"
	"testing"
)

func TestCheckOutput(t *testing.T) {
	ok := "begin to check warehouse 1 at condition 3.3.2.2\nbegin to check warehouse 1 at condition 3.3.2.3\nFinished\n"
	if CheckFailed(ok) != "" || CheckedConditions(ok) != 2 {
		t.Errorf("passing check read as %q, %d", CheckFailed(ok), CheckedConditions(ok))
	}
	bad := ok + "[2024-01-01] execute check failed, err check warehouse 1 at condition 3.3.2.3 failed sum(d_ytd) - max(w_ytd) should be 0\n"
	if !strings.Contains(CheckFailed(bad), "3.3.2.3") {
		t.Errorf("failed check not seen: %q", CheckFailed(bad))
	}
	if Fatal(ok) || !Fatal("load ...\npanic: runtime error\n") || !Fatal("[2024] a fatal occurred: x\n") {
		t.Error("Fatal misread")
	}
}
