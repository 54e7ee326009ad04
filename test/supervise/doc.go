// Package supervise runs the binaries of a local control plane and of quotagate as
// child processes and stops them reliably.
//
// Each process runs in its own process group, so Stop reaches whatever it forks, and
// with a parent-death signal, so a test binary killed on timeout does not leave it
// behind. Its stdout and stderr go to a log file. A process that exits before Stop was
// called is reported by Err as an *ExitError naming it, giving how it ended and quoting
// the end of its log: the message a user needs when a component fails to start.
//
// Stop sends SIGTERM to the group, SIGKILL after a grace period, waits for the
// process, then kills anything it left in its group.
package supervise
