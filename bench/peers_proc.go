package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// peerProcess is a manager the peers bench runs as a process of its own, so its
// resident memory is its own and not the bench's.
type peerProcess struct {
	name  string
	cmd   *exec.Cmd
	log   *os.File
	ready string // the URL of its /readyz
	done  chan error
}

// startPeerProcess starts bin with args, its output in logPath, and waits until
// readyURL answers 200.
func startPeerProcess(ctx context.Context, name, bin string, args []string, env []string, logPath, readyURL string) (*peerProcess, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &peerProcess{name: name, cmd: cmd, log: log, ready: readyURL, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	err = poll(ctx, func(context.Context) (bool, error) {
		select {
		case err := <-p.done:
			p.done <- err
			return false, fmt.Errorf("%s exited (%v); its log is %s", name, err, logPath)
		default:
		}
		resp, err := http.Get(readyURL)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("waiting for %s to be ready: %w", name, err), p.stop())
	}
	return p, nil
}

// pid is the process id, for the CPU meter and RSS.
func (p *peerProcess) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM and waits up to 30 s, then kills the process.
func (p *peerProcess) stop() error {
	defer func() { _ = p.log.Close() }()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		// A manager stopped on purpose exits with SIGTERM's status: nothing to report.
		_ = err
		return nil
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("%s did not stop within 30s after SIGTERM; killed (%v)", p.name, <-p.done)
	}
}

// buildQuotagateManager builds cmd/manager as `make build` does (static, trimmed) into
// dir and returns the binary's path.
func buildQuotagateManager(ctx context.Context, root, dir string) (string, error) {
	out := filepath.Join(dir, "manager")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "./cmd/manager")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building cmd/manager: %w\n%s", err, b)
	}
	return out, nil
}

// startQuotagateProcess runs the manager binary as the quotagate-manager
// ServiceAccount with its defaults, but for leader election (one replica) and the
// metrics server (not read).
func (e *env) startQuotagateProcess(ctx context.Context, bin, dir string) (*peerProcess, error) {
	kubeconfig := filepath.Join(dir, "quotagate-manager.kubeconfig")
	if err := e.cluster.WriteKubeconfig(e.managerSA, kubeconfig); err != nil {
		return nil, err
	}
	probe, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", probe)
	args := []string{"--kubeconfig", kubeconfig, "--leader-elect=false", "--metrics-bind-address", "0",
		"--health-probe-bind-address", addr, "--zap-log-level", "error"}
	return startPeerProcess(ctx, "quotagate manager", bin, args, nil, filepath.Join(dir, "quotagate-manager.log"), "http://"+addr+"/readyz")
}
