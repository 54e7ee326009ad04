package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// downGrace is how long serve gets to stop its processes before it is killed; its
// children die with it (they are started with a parent-death signal).
const downGrace = 30 * time.Second

// down stops the serve process recorded in the state directory and removes the state.
func down(out io.Writer, stateDir string) error {
	pid, ok := runningServe(stateDir)
	if !ok {
		fmt.Fprintln(out, "No local control plane running")
	} else {
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stopping pid %d: %w", pid, err)
		}
		deadline := time.Now().Add(downGrace)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(pid) {
			if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("killing process group %d: %w", pid, err)
			}
		}
		fmt.Fprintf(out, "Local control plane stopped (pid %d)\n", pid)
	}
	if err := os.RemoveAll(stateDir); err != nil {
		return fmt.Errorf("removing %s: %w", stateDir, err)
	}
	return nil
}

// runningServe returns the pid in the state directory's pid file if that process is
// alive and is a serve of this state directory (a pid can be reused after a reboot).
func runningServe(stateDir string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(stateDir, pidFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return 0, false
	}
	args := bytes.Split(cmdline, []byte{0})
	isServe := len(args) > 1 && string(args[1]) == serveSubcmd && bytes.Contains(cmdline, []byte("--dir="+stateDir+"\x00"))
	return pid, isServe && alive(pid)
}

// alive reports whether pid is a live process (not a zombie waiting to be reaped).
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}
