// Package gotpc reads the output of go-tpc (github.com/pingcap/go-tpc), for
// the TPC-C runner (cmd/tpcc) and the crash test (cmd/crashtpcc): go-tpc
// exits 0 after a failed consistency condition or a fatal error, so its
// output is what says how a step went.
package gotpc

import "strings"

// CheckFailed returns the failed conditions in the output of go-tpc's
// check, one per line ("" = passed).
func CheckFailed(out string) string {
	var bad []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "execute check failed") || strings.Contains(l, "panic") {
			bad = append(bad, l)
		}
	}
	return strings.Join(bad, "\n")
}

// CheckedConditions counts the conditions the check began ("begin to
// check" lines).
func CheckedConditions(out string) int { return strings.Count(out, "begin to check") }

// Fatal reports whether go-tpc panicked or gave up ("a fatal occurred").
func Fatal(out string) bool {
	return strings.Contains(out, "panic:") || strings.Contains(out, "a fatal occurred")
}
