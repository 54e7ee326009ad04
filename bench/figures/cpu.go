package figures

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat; it is 100
// on every Linux architecture Go supports.
const clockTicks = 100

// cpuSeconds reads the user plus system CPU time a process has used, from
// /proc/<pid>/stat (fields 14 and 15, counted after the parenthesised command name).
func cpuSeconds(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(raw))
}

func parseStatCPU(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("short stat line %q", stat)
	}
	utime, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	stime, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return float64(utime+stime) / clockTicks, nil
}

// CPUMeter samples the CPU time of named processes, to say which one a measurement
// kept busy.
type CPUMeter map[string]int

// sample returns each process's CPU seconds so far; processes that cannot be read are
// left out.
func (m CPUMeter) Sample() map[string]float64 {
	out := map[string]float64{}
	for name, pid := range m {
		if s, err := cpuSeconds(pid); err == nil {
			out[name] = s
		}
	}
	return out
}

// since returns the CPU seconds each process used since before.
func (m CPUMeter) Since(before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for name, s := range m.Sample() {
		if b, ok := before[name]; ok {
			out[name] = s - b
		}
	}
	return out
}
