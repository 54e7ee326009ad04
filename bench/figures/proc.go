package figures

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RSSBytes reads a process's resident set size from /proc/<pid>/status.
func RSSBytes(pid int) (uint64, error) {
	m, err := ProcessMemory(pid)
	return m.RSS, err
}

// Memory is a process's resident memory as /proc/<pid>/status splits it.
type Memory struct {
	// RSS (VmRSS) is every resident page of the process.
	RSS uint64 `json:"rssBytes"`
	// Anon (RssAnon) is its private memory: heap, stacks, the Go runtime's own.
	Anon uint64 `json:"anonBytes"`
	// File (RssFile) is the pages of files it maps, mostly its own binary's code and
	// read-only data: page cache, shared with any other process of the same binary.
	File uint64 `json:"fileBytes"`
}

// ProcessMemory reads a process's resident memory from /proc/<pid>/status.
func ProcessMemory(pid int) (Memory, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	return parseStatusMemory(string(raw))
}

// parseStatusMemory finds the VmRSS, RssAnon and RssFile lines ("VmRSS:    1234 kB")
// of /proc/<pid>/status.
func parseStatusMemory(status string) (Memory, error) {
	var m Memory
	fields := map[string]*uint64{"VmRSS": &m.RSS, "RssAnon": &m.Anon, "RssFile": &m.File}
	found := 0
	for _, line := range strings.Split(status, "\n") {
		key, rest, ok := strings.Cut(line, ":")
		dst, want := fields[key]
		if !ok || !want {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return Memory{}, fmt.Errorf("unexpected %s line %q", key, line)
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("%s: %w", key, err)
		}
		*dst = kb << 10
		found++
	}
	if found != len(fields) {
		return Memory{}, fmt.Errorf("want VmRSS, RssAnon and RssFile lines in %q", status)
	}
	return m, nil
}

// EtcdDBSize is the size of the etcd backend file of a local control plane in dir
// (test/localcluster keeps etcd's data in <dir>/etcd); 0 if it cannot be read.
func EtcdDBSize(dir string) uint64 {
	fi, err := os.Stat(filepath.Join(dir, "etcd", "member", "snap", "db"))
	if err != nil {
		return 0
	}
	return uint64(fi.Size())
}
