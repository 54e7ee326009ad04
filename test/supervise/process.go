package supervise

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Command says what to run and where its output goes.
type Command struct {
	// Name names the process in errors, such as "kube-apiserver" or "webhook".
	Name   string
	Binary string
	Args   []string
	// Env is appended to this process's environment.
	Env []string
	// LogPath receives the process's stdout and stderr.
	LogPath string
	// AppendLog keeps what LogPath holds and first writes a line with the time and
	// the command line, so a restarted process keeps its earlier runs' output.
	// Otherwise the log is truncated.
	AppendLog bool
}

// Process is a running binary in its own process group. Its methods are safe for
// concurrent use.
type Process struct {
	name    string
	logPath string
	cmd     *exec.Cmd

	done     chan struct{} // closed once the process has exited and waitErr is set
	waitErr  error
	stopping atomic.Bool // set by Stop, so an exit it causes is not reported as a failure
}

// Start starts c.Binary and returns once it runs; it does not wait for it to be ready.
// The caller must call Stop.
func Start(c Command) (*Process, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if c.AppendLog {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	logFile, err := os.OpenFile(c.LogPath, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", c.Name, err)
	}
	if c.AppendLog {
		if _, err := fmt.Fprintf(logFile, "--- %s: %s %s\n", time.Now().Format(time.RFC3339), c.Binary, strings.Join(c.Args, " ")); err != nil {
			_ = logFile.Close()
			return nil, fmt.Errorf("writing log of %s: %w", c.Name, err)
		}
	}
	cmd := exec.Command(c.Binary, c.Args...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// If the process that started it dies without calling Stop (a test binary
		// killed on timeout, a SIGKILLed CLI), the kernel kills it too.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", c.Name, err)
	}
	p := &Process{name: c.Name, logPath: c.LogPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Name is the name the process was started with.
func (p *Process) Name() string { return p.name }

// LogPath is the file that receives the process's output.
func (p *Process) LogPath() string { return p.logPath }

// Pid is the process id, which is also the id of the process group it leads.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited, whether or not Stop was called.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err returns an *ExitError if the process has exited although Stop was not called,
// or nil while it runs and after Stop.
func (p *Process) Err() error {
	select {
	case <-p.done:
		if p.stopping.Load() {
			return nil
		}
		return &ExitError{Process: p.name, Err: p.waitErr, LogPath: p.logPath, LogTail: TailFile(p.logPath, LogTailLines)}
	default:
		return nil
	}
}

// Stop sends SIGTERM to the process group, SIGKILL if the process has not exited
// within grace, waits for the exit, and kills whatever the process left in its group.
// It returns nil if the process had already exited.
func (p *Process) Stop(grace time.Duration) error {
	p.stopping.Store(true)
	select {
	case <-p.done:
		return nil
	default:
	}
	pgid := p.Pid()
	if err := killGroup(pgid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("terminating %s: %w", p.name, err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		if err := killGroup(pgid, syscall.SIGKILL); err != nil {
			return fmt.Errorf("killing %s: %w", p.name, err)
		}
		<-p.done
	}
	// The leader is gone; kill whatever it left behind in its group.
	if err := killGroup(pgid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing the rest of %s's process group: %w", p.name, err)
	}
	return nil
}

// Kill ends the process group with SIGKILL at once, as a node failure or an OOM kill
// would: the process gets no chance to clean up (a leader does not release its Lease).
// Like Stop, it makes Err report nothing for the exit.
func (p *Process) Kill() error {
	p.stopping.Store(true)
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := killGroup(p.Pid(), syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing %s: %w", p.name, err)
	}
	<-p.done
	return nil
}

// killGroup signals every process in the group; a group already empty is not an error.
func killGroup(pgid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// ExitError reports a process that exited while it should have been running.
type ExitError struct {
	Process string // the process name, such as "kube-apiserver" or "manager"
	Err     error  // the result of waiting for it
	LogPath string
	LogTail string // the last lines of its log
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s exited (%v); last lines of %s:\n%s", e.Process, e.Err, e.LogPath, e.LogTail)
}

func (e *ExitError) Unwrap() error { return e.Err }
