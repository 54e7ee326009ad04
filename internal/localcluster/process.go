package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
const stopGrace = 5 * time.Second

// process is one running binary of the control plane, in its own process group so
// that Stop reaches any child it forks.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	logFile *os.File

	done     chan struct{} // closed once the process has exited and waitErr is set
	waitErr  error
	stopping atomic.Bool // set by stop, so an exit it causes is not reported as a failure
}

// startProcess runs binary with args, appending its stdout and stderr to logPath.
func startProcess(name, binary string, args, env []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", name, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// If the process that started the cluster dies without calling Stop (a test
		// binary killed on timeout, a SIGKILLed CLI), the kernel kills its children.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, logFile: logFile, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended without stop being called.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return !p.stopping.Load()
	default:
		return false
	}
}

// exitError describes an early exit: which process, how it ended, and its last lines.
func (p *process) exitError() error {
	return &ExitError{Process: p.name, Err: p.waitErr, LogPath: p.logPath, LogTail: tailFile(p.logPath, logTailLines)}
}

// pid returns the process id, which is also its process group id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM to the process group, then SIGKILL if it has not exited within
// grace, and waits for the exit.
func (p *process) stop(grace time.Duration) error {
	p.stopping.Store(true)
	select {
	case <-p.done:
		return nil
	default:
	}
	pgid := p.pid()
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("terminating %s: %w", p.name, err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("killing %s: %w", p.name, err)
		}
		<-p.done
	}
	// The leader is gone; kill whatever it left behind in its group.
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing the rest of %s's process group: %w", p.name, err)
	}
	return nil
}

// ExitError reports a control plane process that exited while it should have been
// running.
type ExitError struct {
	Process string // the process name, such as "kube-apiserver"
	Err     error  // the result of waiting for it
	LogPath string
	LogTail string // the last lines of its log
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s exited early (%v); last lines of %s:\n%s", e.Process, e.Err, e.LogPath, e.LogTail)
}

func (e *ExitError) Unwrap() error { return e.Err }

// tailFile returns the last n lines of a file, or a note saying why it cannot.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer func() { _ = f.Close() }()
	// Log lines are short; the last 64 KiB hold more than n of them.
	const window = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		if _, err := f.Seek(-window, io.SeekEnd); err != nil {
			return fmt.Sprintf("(cannot read log: %v)", err)
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	return lastLines(data, n)
}

// lastLines returns the last n lines of data, without a trailing newline.
func lastLines(data []byte, n int) string {
	data = bytes.TrimRight(data, "\n")
	lines := strings.Split(string(data), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
