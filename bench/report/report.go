// Package report is what the three benchmarks (bench/figures, bench/peers,
// bench/scale) share to write their reports: the JSON report and the Markdown rendered
// from it (Write, and RenderAgain for -render-only), the machine they ran on, the
// statistics of their samples (stats.go), and the progress log.
package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/quotagate/quotagate/test/localcluster"
)

// Document is a benchmark's report: the JSON holds every number, and the Markdown is
// rendered from it alone, so that -render-only renders it again without measuring.
type Document interface {
	Markdown() string
}

// Write writes the report r as JSON to jsonPath and as Markdown to mdPath.
func Write(r Document, jsonPath, mdPath string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(jsonPath, append(raw, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(mdPath, []byte(r.Markdown()), 0o644); err != nil {
		return err
	}
	Logf("Wrote %s and %s", mdPath, jsonPath)
	return nil
}

// Link is how the Markdown report at mdPath links to the JSON one at jsonPath: the path
// from the one's directory to the other (the reports live in docs/, their JSON beside
// the code that writes it), or jsonPath's name when they share no root.
func Link(mdPath, jsonPath string) string {
	rel, err := filepath.Rel(filepath.Dir(mdPath), jsonPath)
	if err != nil {
		return filepath.Base(jsonPath)
	}
	return filepath.ToSlash(rel)
}

// RenderAgain reads the JSON report at jsonPath into r, a pointer to an empty report,
// and writes its Markdown to mdPath.
func RenderAgain(r Document, jsonPath, mdPath string) error {
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, r); err != nil {
		return fmt.Errorf("reading %s: %w", jsonPath, err)
	}
	return os.WriteFile(mdPath, []byte(r.Markdown()), 0o644)
}

// Logf writes a line of progress, timed, to stderr.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// NewMachine describes this machine, its load average now as LoadBefore.
func NewMachine() Machine {
	m := Machine{
		NProc:       runtime.NumCPU(),
		GoVersion:   runtime.Version(),
		KubeVersion: localcluster.KubeVersion,
		KwokVersion: localcluster.KwokVersion,
		LoadBefore:  LoadAverage(),
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		defer func() { _ = f.Close() }()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
				m.MemoryGiB = kb / (1 << 20)
			}
		}
	}
	return m
}

// LoadAverage is the 1, 5 and 15 minute load averages.
func LoadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// RepoPaths finds the repository's root from the working directory and returns it with a
// func that resolves a flag's path: absolute as given, relative to the root otherwise.
func RepoPaths() (root string, abs func(string) string, err error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", nil, err
	}
	if root, err = localcluster.RepoRoot(wd); err != nil {
		return "", nil, err
	}
	return root, func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}, nil
}

// Machine is where the run happened.
type Machine struct {
	NProc       int     `json:"nproc"`
	MemoryGiB   float64 `json:"memoryGiB"`
	GoVersion   string  `json:"goVersion"`
	KubeVersion string  `json:"kubeVersion"`
	KwokVersion string  `json:"kwokVersion"`
	LoadBefore  string  `json:"loadAverageBefore"`
	LoadAfter   string  `json:"loadAverageAfter"`
}

// YesNo is a report's "met?" cell: a missed goal in bold.
func YesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// MiB is bytes in mebibytes.
func MiB(b uint64) float64 { return float64(b) / (1 << 20) }
