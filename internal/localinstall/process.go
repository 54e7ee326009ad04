package localinstall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// logTailLines is how much of a process's log an error quotes.
const logTailLines = 30

// stopGrace is how long a process gets to exit after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// process is a quotagate binary running on this machine, in its own process group.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd

	done     chan struct{} // closed once the process has exited and waitErr is set
	waitErr  error
	stopping atomic.Bool // set by stop, so the exit it causes is not reported as a failure
}

// startProcess runs binary with args and env appended to this process's environment,
// writing its output to logPath (appended, so a restarted process keeps its history).
func startProcess(name, binary string, args, env []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", name, err)
	}
	fmt.Fprintf(logFile, "--- %s: %s %s\n", time.Now().Format(time.RFC3339), binary, strings.Join(args, " "))
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// If the process that started it dies without Stop (a test binary killed on
		// timeout), the kernel kills it too.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exitError returns an error naming the process and quoting its log if it has exited
// without stop being called, else nil.
func (p *process) exitError() error {
	select {
	case <-p.done:
		if p.stopping.Load() {
			return nil
		}
		return &ExitError{Process: p.name, Err: p.waitErr, LogPath: p.logPath, LogTail: tailFile(p.logPath, logTailLines)}
	default:
		return nil
	}
}

// stop sends SIGTERM to the process group, SIGKILL after stopGrace, and waits.
func (p *process) stop() error {
	p.stopping.Store(true)
	select {
	case <-p.done:
		return nil
	default:
	}
	pgid := p.cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("terminating %s: %w", p.name, err)
	}
	timer := time.NewTimer(stopGrace)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("killing %s: %w", p.name, err)
		}
		<-p.done
	}
	return nil
}

// ExitError reports a quotagate process that exited while it should have been running.
type ExitError struct {
	Process string // "webhook", "manager" or "release-hook"
	Err     error  // the result of waiting for it
	LogPath string
	LogTail string // the last lines of its log
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s exited (%v); last lines of %s:\n%s", e.Process, e.Err, e.LogPath, e.LogTail)
}

func (e *ExitError) Unwrap() error { return e.Err }

// waitReady polls url until it answers 200, the process exits, or ctx ends.
func (p *process) waitReady(ctx context.Context, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	var last error
	for {
		if err := p.exitError(); err != nil {
			return err
		}
		last = probe(ctx, client, url)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to be ready at %s: %w (last error: %v); last lines of %s:\n%s",
				p.name, url, ctx.Err(), last, p.logPath, tailFile(p.logPath, logTailLines))
		case <-ticker.C:
		}
	}
}

func probe(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// freePort returns a port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailFile returns the last n lines of a file, or a note saying why it cannot.
func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	const window = 64 << 10
	if len(data) > window {
		data = data[len(data)-window:]
	}
	lines := strings.Split(string(bytes.TrimRight(data, "\n")), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
