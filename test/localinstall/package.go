package localinstall

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/quotagate/quotagate/internal/version"
)

// PackageChart is `helm package chartDir -d destDir` with the Helm SDK: it writes
// <name>-<version>.tgz into destDir and returns its path. Install packages the working
// tree's chart this way and installs the archive, as a user installs a released chart.
func PackageChart(chartDir, destDir string) (string, error) {
	if err := os.MkdirAll(destDir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", destDir, err)
	}
	p := action.NewPackage()
	p.Destination = destDir
	path, err := p.Run(chartDir, nil)
	if err != nil {
		return "", fmt.Errorf("packaging the chart %s: %w", chartDir, err)
	}
	return path, nil
}

// loadPackagedChart loads a chart archive (.tgz), as `helm install <release> x.tgz`
// does.
func loadPackagedChart(path string) (*chart.Chart, error) {
	chrt, err := loader.LoadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading the packaged chart %s: %w", path, err)
	}
	return chrt, nil
}

// ChartVersions reads a packaged chart's version and appVersion.
func ChartVersions(path string) (chartVersion, appVersion string, err error) {
	chrt, err := loadPackagedChart(path)
	if err != nil {
		return "", "", err
	}
	return chrt.Metadata.Version, chrt.Metadata.AppVersion, nil
}

// BuildRelease builds the webhook and manager of the repository at repoRoot into dir,
// static, -trimpath, stripped and stamped with version and revision (version.LDFlags)
// exactly as `make build` and the image build them (so the go command's cache serves
// all three), so that `manager version` and quotagate_build_info say which
// release runs. A tree whose binaries predate package version builds the same way: the
// linker ignores the stamp. BuildBinaries builds the working tree through it.
func BuildRelease(ctx context.Context, repoRoot, dir, ver, revision string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", version.LDFlags(ver, revision),
		"-o", dir+string(filepath.Separator), "./cmd/webhook", "./cmd/manager")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the webhook and manager %s in %s: %w\n%s", ver, repoRoot, err, out.String())
	}
	return nil
}

// chartToInstall is o.ChartPath or, without one, the working tree's chart packaged into
// o.Dir.
func chartToInstall(o Options) (string, error) {
	if o.ChartPath != "" {
		return o.ChartPath, nil
	}
	return PackageChart(filepath.Join(o.RepoRoot, "charts", "quotagate"), o.Dir)
}
