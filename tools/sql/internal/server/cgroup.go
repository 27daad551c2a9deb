package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Cgroup is a memory cgroup holding one server: its limit counts the
// process's memory and the page cache it reads, so an engine that reads
// through the OS cache gets no more memory than one held to its own cache.
// A nil *Cgroup is valid (no limit) for every method.
type Cgroup struct {
	dir string
	v2  bool
}

// NewCgroup creates a memory cgroup with the limit, trying cgroup v2
// (a unified hierarchy with the memory controller) and then v1
// (/sys/fs/cgroup/memory). It returns nil and a note saying why when
// neither is usable (not root, no controller).
func NewCgroup(name string, limit int64) (*Cgroup, string) {
	if os.Geteuid() != 0 {
		return nil, "no memory limit (not root: cannot create a memory cgroup)"
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && strings.Contains(string(b), "memory") {
		dir := filepath.Join("/sys/fs/cgroup", name)
		if err := os.Mkdir(dir, 0o755); err == nil || os.IsExist(err) {
			if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(strconv.FormatInt(limit, 10)), 0o644); err == nil {
				_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0o644)
				return &Cgroup{dir: dir, v2: true}, "cgroup v2 memory.max " + FormatBytes(limit) + " (page cache included)"
			}
			_ = os.Remove(dir)
		}
	}
	base := "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(base, "memory.limit_in_bytes")); err != nil {
		return nil, "no memory limit (no cgroup memory controller on this machine)"
	}
	dir := filepath.Join(base, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return nil, "no memory limit (cannot create a memory cgroup: " + err.Error() + ")"
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		_ = os.Remove(dir)
		return nil, "no memory limit (cannot set the cgroup limit: " + err.Error() + ")"
	}
	return &Cgroup{dir: dir}, "cgroup v1 memory.limit_in_bytes " + FormatBytes(limit) + " (page cache included)"
}

// ProcsFile is where a process writes its pid to join the group.
func (c *Cgroup) ProcsFile() string { return filepath.Join(c.dir, "cgroup.procs") }

// Peak memory use of the group in bytes (0 if unknown).
func (c *Cgroup) Peak() int64 {
	if c == nil {
		return 0
	}
	f := "memory.max_usage_in_bytes"
	if c.v2 {
		f = "memory.peak"
	}
	b, err := os.ReadFile(filepath.Join(c.dir, f))
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v
}

// Remove deletes the group once its processes have exited.
func (c *Cgroup) Remove() {
	if c == nil {
		return
	}
	for i := 0; i < 50; i++ {
		if err := os.Remove(c.dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "warning: could not remove cgroup %s\n", c.dir)
}
