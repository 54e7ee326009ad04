package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/quotagate/quotagate/test/supervise"
)

// up starts `localcluster serve` in a session of its own, so it outlives this process
// and the terminal, and returns once the cluster is ready or serve has failed.
func up(ctx context.Context, out io.Writer, f *clusterFlags) error {
	if pid, ok := runningServe(f.stateDir); ok {
		kubeconfig, err := os.ReadFile(filepath.Join(f.stateDir, readyFile))
		if err != nil {
			return fmt.Errorf("a local cluster is starting or running (pid %d) but not ready: run `make cluster-down` first", pid)
		}
		fmt.Fprintf(out, "Local control plane already running (pid %d)\n", pid)
		printKubeconfig(out, strings.TrimSpace(string(kubeconfig)))
		return nil
	}
	if err := os.RemoveAll(f.stateDir); err != nil {
		return fmt.Errorf("clearing state directory: %w", err)
	}
	if err := os.MkdirAll(f.stateDir, 0o755); err != nil {
		return fmt.Errorf("creating state directory: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding own executable: %w", err)
	}
	logPath := filepath.Join(f.stateDir, serveLog)
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("creating %s: %w", logPath, err)
	}
	defer func() { _ = logFile.Close() }()

	cmd := exec.Command(exe, append([]string{serveSubcmd}, f.args()...)...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// A new session: no controlling terminal, and a process group whose id is the pid,
	// which down signals.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the background control plane: %w", err)
	}
	pid := cmd.Process.Pid
	if err := os.WriteFile(filepath.Join(f.stateDir, pidFile), []byte(fmt.Sprintln(pid)), 0o644); err != nil {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		return fmt.Errorf("writing pid file: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	fmt.Fprintf(out, "Starting the local control plane in the background (pid %d, log %s)\n", pid, logPath)
	ctx, cancel := context.WithTimeout(ctx, upTimeout)
	defer cancel()
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		if kubeconfig, err := os.ReadFile(filepath.Join(f.stateDir, readyFile)); err == nil {
			fmt.Fprintf(out, "Local control plane ready: %d kwok nodes, logs in %s\n", f.nodes, filepath.Join(f.stateDir, clusterDir))
			printKubeconfig(out, strings.TrimSpace(string(kubeconfig)))
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("the background control plane exited (%v); end of %s:\n%s", err, logPath, supervise.TailFile(logPath, 40))
		case <-ctx.Done():
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			return fmt.Errorf("waiting for the local control plane: %w; end of %s:\n%s", ctx.Err(), logPath, supervise.TailFile(logPath, 40))
		case <-ticker.C:
		}
	}
}

func printKubeconfig(out io.Writer, path string) {
	fmt.Fprintf(out, "Kubeconfig: %s\n\n    export KUBECONFIG=%s\n    kubectl get nodes\n", path, path)
}
