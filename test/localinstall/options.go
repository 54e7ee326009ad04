package localinstall

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/quotagate/quotagate/test/localcluster"
)

// Defaults of Options.
const (
	DefaultRelease   = "quotagate"
	DefaultNamespace = "quotagate-system"
	defaultTimeout   = 2 * time.Minute
)

// tokenTTL is the lifetime of the ServiceAccount tokens the processes run with; they
// are not refreshed, so it outlasts a long demo.
const tokenTTL = 24 * time.Hour

// Options configure Install. The zero value installs release "quotagate" into
// "quotagate-system" with the chart's default values.
type Options struct {
	// Release is the Helm release name; empty means "quotagate".
	Release string
	// Namespace is the release namespace, created if missing; empty means
	// "quotagate-system".
	Namespace string
	// ChartPath is a packaged chart (.tgz) to install, as `helm install <release>
	// <ChartPath>` would. Empty means the working tree's charts/quotagate, packaged with
	// PackageChart into Dir.
	ChartPath string
	// Values are the chart values, as `helm install --values` would take them.
	Values map[string]any
	// BinDir holds the webhook and manager binaries. Empty means build them into
	// <Dir>/bin with BuildBinaries.
	BinDir string
	// Dir holds the logs, kubeconfigs and serving certificate of the processes. Empty
	// means <cluster dir>/quotagate.
	Dir string
	// RepoRoot is the quotagate repository (for the chart, the go command and the
	// sources of the binaries). Empty means the one containing the working directory.
	RepoRoot string
	// Timeout bounds each Helm action (including the pre-delete hook) and each wait
	// for a process to be ready; 0 means 2 minutes.
	Timeout time.Duration
}

func (o Options) withDefaults(c *localcluster.Cluster) (Options, error) {
	if o.Release == "" {
		o.Release = DefaultRelease
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Timeout == 0 {
		o.Timeout = defaultTimeout
	}
	if o.Dir == "" {
		o.Dir = filepath.Join(c.Dir(), "quotagate")
	}
	o.Values = maps.Clone(o.Values)
	if o.Values == nil {
		o.Values = map[string]any{}
	}
	if o.RepoRoot == "" {
		wd, err := os.Getwd()
		if err != nil {
			return o, fmt.Errorf("finding the repository: %w", err)
		}
		if o.RepoRoot, err = localcluster.RepoRoot(wd); err != nil {
			return o, err
		}
	}
	if o.BinDir == "" {
		o.BinDir = filepath.Join(o.Dir, "bin")
	}
	var err error
	if o.Dir, err = filepath.Abs(o.Dir); err != nil {
		return o, err
	}
	if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
		return o, err
	}
	if o.ChartPath != "" {
		if o.ChartPath, err = filepath.Abs(o.ChartPath); err != nil {
			return o, err
		}
	}
	return o, nil
}

// BuildBinaries builds the webhook and manager binaries of the repository at repoRoot
// into dir, stamped (version.LDFlags) with the chart's appVersion and the checkout's
// commit, as `make build` stamps them. The go command's build cache makes a rebuild of
// unchanged sources quick.
func BuildBinaries(ctx context.Context, repoRoot, dir string) error {
	b, err := os.ReadFile(filepath.Join(repoRoot, "charts", "quotagate", "Chart.yaml"))
	if err != nil {
		return fmt.Errorf("reading the chart's appVersion: %w", err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil || chart.AppVersion == "" {
		return fmt.Errorf("reading the chart's appVersion from charts/quotagate/Chart.yaml: %v", err)
	}
	revision := "unknown"
	git := exec.CommandContext(ctx, "git", "rev-parse", "HEAD")
	git.Dir = repoRoot
	if out, err := git.Output(); err == nil {
		revision = strings.TrimSpace(string(out))
	}
	return BuildRelease(ctx, repoRoot, dir, chart.AppVersion, revision)
}
