package figures

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// coreResult is the admission core's in-process benchmarks: every value of every metric
// (ns/op, B/op, allocs/op, decisions/s) of every benchmark, one per repetition.
type coreResult struct {
	Command string                          `json:"command"`
	Metrics map[string]map[string][]float64 `json:"metrics"`
}

// coreBenchPackage is the package whose benchmarks figure 5 runs.
const coreBenchPackage = "./pkg/quota/"

// runCoreBenchmarks runs the admission core's go test benchmarks count times, from the
// repository root, and parses their output.
func runCoreBenchmarks(ctx context.Context, root string, count int) (coreResult, error) {
	args := []string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-count", strconv.Itoa(count), coreBenchPackage}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	r := coreResult{Command: "go " + strings.Join(args, " ")}
	if err != nil {
		return r, fmt.Errorf("%s: %w\n%s", r.Command, err, out)
	}
	r.Metrics = parseBenchOutput(out)
	if len(r.Metrics) == 0 {
		return r, fmt.Errorf("%s printed no benchmark results:\n%s", r.Command, out)
	}
	return r, nil
}

// parseBenchOutput reads `go test -bench` output: each result line is a name with a
// GOMAXPROCS suffix, an iteration count, then value-unit pairs. The suffix is dropped.
func parseBenchOutput(out []byte) map[string]map[string][]float64 {
	res := map[string]map[string][]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := f[0]
		if i := strings.LastIndex(name, "-"); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			if res[name] == nil {
				res[name] = map[string][]float64{}
			}
			res[name][f[i+1]] = append(res[name][f[i+1]], v)
		}
	}
	return res
}
