package localinstall

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/quotagate/quotagate/test/localcluster"
)

// Install installs the chart as a user does, from its package: PackageChart writes
// quotagate-<version>.tgz with the working tree's Chart.yaml versions.
func TestPackageChart(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := localcluster.RepoRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	chartDir := filepath.Join(root, "charts", "quotagate")
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Version, AppVersion string }
	if err := yaml.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}

	path, err := PackageChart(chartDir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := filepath.Base(path), "quotagate-"+meta.Version+".tgz"; got != want {
		t.Errorf("packaged chart %s, want %s", got, want)
	}
	v, app, err := ChartVersions(path)
	if err != nil {
		t.Fatal(err)
	}
	if v != meta.Version || app != meta.AppVersion {
		t.Errorf("the package says version %q appVersion %q, want %q and %q", v, app, meta.Version, meta.AppVersion)
	}

	// Install's chart: the one named, or the working tree's packaged into Dir.
	if got, err := chartToInstall(Options{ChartPath: path}); got != path || err != nil {
		t.Errorf("with ChartPath: installs %q, %v; want %s", got, err, path)
	}
	dir := t.TempDir()
	got, err := chartToInstall(Options{RepoRoot: root, Dir: dir})
	if want := filepath.Join(dir, filepath.Base(path)); got != want || err != nil {
		t.Errorf("without ChartPath: installs %q, %v; want %s", got, err, want)
	}
}
