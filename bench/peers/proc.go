package peers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/quotagate/quotagate/bench/figures"
	"github.com/quotagate/quotagate/bench/report"
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
	err = figures.Poll(ctx, func(context.Context) (bool, error) {
		select {
		case err := <-p.done:
			p.done <- err
			return false, fmt.Errorf("%s exited (%v); its log is %s", name, err, logPath)
		default:
		}
		return figures.AnswersOK(readyURL), nil
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("waiting for %s to be ready: %w", name, err), p.Stop())
	}
	return p, nil
}

// pid is the process id, for the CPU meter and RSS.
func (p *peerProcess) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM and waits up to 30 s, then kills the process.
func (p *peerProcess) Stop() error {
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
	return buildStatic(ctx, root, "./cmd/manager", filepath.Join(dir, "manager"))
}

// buildStatic builds the package pkg of the repository at root as `make build` builds
// the manager (static, trimmed) into out.
func buildStatic(ctx context.Context, root, pkg, out string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %w\n%s", pkg, err, b)
	}
	return out, nil
}

// startBareManager runs bench/baremanager (built into bin), the memory figure's floor,
// as the quotagate-manager ServiceAccount (which may watch every pod).
func (e *env) startBareManager(ctx context.Context, bin, dir string) (*peerProcess, string, error) {
	kubeconfig := filepath.Join(dir, "bare-manager.kubeconfig")
	if err := e.Cluster.WriteKubeconfig(e.ManagerSA, kubeconfig); err != nil {
		return nil, "", err
	}
	probe, err := figures.FreePort()
	if err != nil {
		return nil, "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", probe)
	args := []string{"--kubeconfig", kubeconfig, "--health-probe-bind-address", addr}
	p, err := startPeerProcess(ctx, "bare manager", bin, args, nil, filepath.Join(dir, "bare-manager.log"), "http://"+addr+"/readyz")
	return p, "http://" + addr + "/readyz/pods", err
}

// startQuotagateProcess runs the manager binary as the quotagate-manager
// ServiceAccount with its defaults, but for leader election (one replica) and the
// metrics server (not read).
// With profile, it also serves /debug/pprof on a local port, pprof (the base URL).
func (e *env) startQuotagateProcess(ctx context.Context, bin, dir string, profile bool) (p *peerProcess, pprof string, err error) {
	kubeconfig := filepath.Join(dir, "quotagate-manager.kubeconfig")
	if err := e.Cluster.WriteKubeconfig(e.ManagerSA, kubeconfig); err != nil {
		return nil, "", err
	}
	probe, err := figures.FreePort()
	if err != nil {
		return nil, "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", probe)
	args := []string{"--kubeconfig", kubeconfig, "--leader-elect=false", "--metrics-bind-address", "0",
		"--health-probe-bind-address", addr, "--zap-log-level", "error"}
	if profile {
		port, err := figures.FreePort()
		if err != nil {
			return nil, "", err
		}
		pprof = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", port)
		args = append(args, "--pprof-bind-address", fmt.Sprintf("127.0.0.1:%d", port))
	}
	p, err = startPeerProcess(ctx, "quotagate manager", bin, args, nil, filepath.Join(dir, "quotagate-manager.log"), "http://"+addr+"/readyz")
	return p, pprof, err
}

// profileCPU takes CPU profiles of the process serving pprof (a /debug/pprof URL), one
// after another, each of at most 20 s, into dir/name-N.pprof, until the returned stop
// is called; stop waits for the last one (go tool pprof reads them together).
func profileCPU(ctx context.Context, pprof, dir, name string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; ctx.Err() == nil; i++ {
			path := filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", name, i))
			if err := fetchProfile(ctx, pprof+"/profile?seconds=20", path); err != nil {
				if ctx.Err() == nil {
					report.Logf("  profile %s: %v", path, err)
				}
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
		report.Logf("  CPU profiles of the quotagate manager: %s-*.pprof (go tool pprof -top %s-*.pprof)", filepath.Join(dir, name), filepath.Join(dir, name))
	}
}

func fetchProfile(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o644)
}

// measureBareManager runs the bare manager (bench/baremanager) beside quotagate's for the
// memory figure only: its memory after start, then, through park (which creates the
// gated pods and calls what it is given while they exist), with the same pods once its
// cache holds them all. It is stopped before the other figures, so it takes no CPU from
// them.
func measureBareManager(ctx context.Context, e *env, n int, bin, dir string, r *PeersReport, park func(also func(context.Context) error) error) (err error) {
	bare, podsURL, err := e.startBareManager(ctx, bin, dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, bare.Stop()) }()
	if r.Bare.Idle, err = figures.ProcessMemory(bare.pid()); err != nil {
		return err
	}
	return park(func(ctx context.Context) error {
		if err := figures.WaitReady(ctx, fmt.Sprintf("%s?min=%d", podsURL, n)); err != nil {
			return fmt.Errorf("waiting for the bare manager to cache %d pods: %w", n, err)
		}
		r.Bare.Gated, err = figures.ProcessMemory(bare.pid())
		return err
	})
}
