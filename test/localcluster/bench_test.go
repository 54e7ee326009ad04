package localcluster

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkStart measures how long Start takes to a ready cluster, and reports the
// summed peak resident memory (VmHWM) of the control plane's processes at that point.
//
//	go test -run '^$' -bench Start -benchtime 3x ./test/localcluster
func BenchmarkStart(b *testing.B) {
	var peakKB int64
	var took time.Duration
	for b.Loop() {
		began := time.Now()
		c, err := Start(b.Context(), Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		took += time.Since(began)
		var sum int64
		for name, pid := range c.Pids() {
			kb, err := peakRSS(pid)
			if err != nil {
				b.Fatalf("Reading peak RSS of %s: %v", name, err)
			}
			sum += kb
		}
		peakKB = max(peakKB, sum)
		if err := c.Stop(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(took.Seconds()/float64(b.N), "s-to-ready/op")
	b.ReportMetric(float64(peakKB)/1024, "MiB-peak-rss")
}

// peakRSS reads a process's peak resident set size in KiB.
func peakRSS(pid int) (int64, error) {
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, os.ErrNotExist
}
