package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// rssBytes reads a process's resident set size from /proc/<pid>/status.
func rssBytes(pid int) (uint64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseStatusRSS(string(raw))
}

// parseStatusRSS finds the VmRSS line ("VmRSS:    1234 kB") of /proc/<pid>/status.
func parseStatusRSS(status string) (uint64, error) {
	for _, line := range strings.Split(status, "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmRSS line %q", line)
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmRSS: %w", err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("no VmRSS line in %q", status)
}

// etcdDBSize is the size of the etcd backend file of a local control plane in dir
// (internal/localcluster keeps etcd's data in <dir>/etcd); 0 if it cannot be read.
func etcdDBSize(dir string) uint64 {
	fi, err := os.Stat(filepath.Join(dir, "etcd", "member", "snap", "db"))
	if err != nil {
		return 0
	}
	return uint64(fi.Size())
}
