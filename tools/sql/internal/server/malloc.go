// malloc.go: the memory allocator a server runs with. glibc's malloc is
// the default; jemalloc, mimalloc and tcmalloc (Debian's libjemalloc2,
// libmimalloc2.0 and libtcmalloc-minimal4, which scripts/mariadb/setup.sh
// installs) are preloaded into mariadbd with LD_PRELOAD. After start the
// server's /proc/<pid>/maps must hold the library asked for and no other
// of them, so a result never names an allocator the server did not use.
package server

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Glibc is the default allocator: nothing preloaded.
const Glibc = "glibc"

// Allocators are the allocator names, the default first.
var Allocators = []string{Glibc, "jemalloc", "mimalloc", "tcmalloc"}

// mallocSoname is the library each preloaded allocator is loaded from.
var mallocSoname = map[string]string{
	"jemalloc": "libjemalloc.so.2",
	"mimalloc": "libmimalloc.so.2",
	"tcmalloc": "libtcmalloc_minimal.so.4",
}

// mallocPackage is the Debian package holding each library.
var mallocPackage = map[string]string{
	"jemalloc": "libjemalloc2",
	"mimalloc": "libmimalloc2.0",
	"tcmalloc": "libtcmalloc-minimal4",
}

// mallocMapped recognises an allocator's library in a maps line by its
// file name (the soname is often a link to a versioned file such as
// libmimalloc.so.2.0; tcmalloc's debug variant counts as tcmalloc).
var mallocMapped = map[string]string{
	"jemalloc": "libjemalloc.so",
	"mimalloc": "libmimalloc.so",
	"tcmalloc": "libtcmalloc",
}

// ParseMalloc checks an allocator name ("" is glibc).
func ParseMalloc(name string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" {
		return Glibc, nil
	}
	for _, a := range Allocators {
		if n == a {
			return a, nil
		}
	}
	return "", fmt.Errorf("unknown allocator %q (want one of %s)", name, strings.Join(Allocators, ", "))
}

// ParseMallocs reads a comma- or space-separated list of allocators, in
// order, each once.
func ParseMallocs(list string) ([]string, error) {
	var out []string
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' }) {
		a, err := ParseMalloc(f)
		if err != nil {
			return nil, err
		}
		for _, x := range out {
			if x == a {
				return nil, fmt.Errorf("allocator %s given twice", a)
			}
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no allocator given (want one of %s)", strings.Join(Allocators, ", "))
	}
	return out, nil
}

// multiarch is Debian's library directory name for this machine.
func multiarch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64-linux-gnu"
	case "arm64":
		return "aarch64-linux-gnu"
	case "386":
		return "i386-linux-gnu"
	case "ppc64le":
		return "powerpc64le-linux-gnu"
	case "s390x":
		return "s390x-linux-gnu"
	}
	return runtime.GOARCH + "-linux-gnu"
}

// MallocLibrary is the file LD_PRELOAD loads for an allocator ("" for
// glibc): the machine's multiarch directory first, then any
// /usr/lib/*/ and /usr/lib. A missing library is an error naming the
// package that provides it.
func MallocLibrary(name string) (string, error) {
	a, err := ParseMalloc(name)
	if err != nil || a == Glibc {
		return "", err
	}
	so := mallocSoname[a]
	cands := []string{filepath.Join("/usr/lib", multiarch(), so), filepath.Join("/lib", multiarch(), so)}
	g, _ := filepath.Glob(filepath.Join("/usr/lib", "*", so))
	cands = append(append(cands, g...), filepath.Join("/usr/lib", so), filepath.Join("/usr/local/lib", so))
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
			return c, nil
		}
	}
	return "", fmt.Errorf("allocator %s: %s not found in /usr/lib/%s or /usr/lib/*/: install %s (scripts/mariadb/setup.sh installs it)",
		a, so, multiarch(), mallocPackage[a])
}

// MappedAllocators lists the preloadable allocators whose library is
// mapped in process pid (none: it runs on glibc's malloc).
func MappedAllocators(pid int) ([]string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		base := filepath.Base(fields[len(fields)-1])
		for a, prefix := range mallocMapped {
			if strings.HasPrefix(base, prefix) {
				seen[a] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var out []string
	for _, a := range Allocators {
		if seen[a] {
			out = append(out, a)
		}
	}
	return out, nil
}

// CheckMalloc fails unless process pid runs on allocator want: its
// library mapped and no other preloadable allocator's (for glibc: none).
func CheckMalloc(pid int, want string) error {
	m, err := MappedAllocators(pid)
	if err != nil {
		return fmt.Errorf("allocator %s not verified: reading the memory map of pid %d: %w", want, pid, err)
	}
	ok := (want == Glibc && len(m) == 0) || (len(m) == 1 && m[0] == want)
	if ok {
		return nil
	}
	got := "glibc's malloc only"
	if len(m) > 0 {
		got = strings.Join(m, " and ")
	}
	return fmt.Errorf("allocator %s asked for, but /proc/%d/maps shows %s", want, pid, got)
}

// MallocSummary describes an allocator choice for a run's description.
func MallocSummary(name string) string {
	if name == Glibc || name == "" {
		return Glibc + " (nothing preloaded)"
	}
	return name + " (LD_PRELOAD " + mallocSoname[name] + ", checked mapped in each server)"
}

// preloadEnv is the server's environment: this process's without any
// LD_PRELOAD, plus the allocator's library when one is given (an
// inherited LD_PRELOAD would make the server use another allocator than
// the one the results name).
func preloadEnv(lib string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LD_PRELOAD=") {
			env = append(env, kv)
		}
	}
	if lib != "" {
		env = append(env, "LD_PRELOAD="+lib)
	}
	return env
}
