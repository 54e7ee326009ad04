//go:build unix

package estimate

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used (user + system, all threads). The
// benchmarks report it besides wall time, which a shared machine inflates.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
