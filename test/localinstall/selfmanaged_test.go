package localinstall

import (
	"os"
	"path/filepath"
	"testing"
)

// Whether quotagate manages its own certificate is the chart's certManager.enabled, with
// the values over the chart's own default: this chart's is false, an older chart's
// (0.2.0, which TestUpgradeFromPreviousRelease installs) true.
func TestSelfManagedCerts(t *testing.T) {
	this, err := PackageChart(filepath.Join("..", "..", "charts", "quotagate"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	older := olderChart(t)
	for name, c := range map[string]struct {
		chart  string
		values map[string]any
		want   bool
	}{
		"this chart's default":         {this, nil, true},
		"this chart, an issuer only":   {this, map[string]any{"certManager": map[string]any{"issuerRef": map[string]any{"name": "ca"}}}, true},
		"this chart, cert-manager":     {this, map[string]any{"certManager": map[string]any{"enabled": true}}, false},
		"this chart, enabled=false":    {this, map[string]any{"certManager": map[string]any{"enabled": false}}, true},
		"an older chart's default":     {older, nil, false},
		"an older chart, self-managed": {older, map[string]any{"certManager": map[string]any{"enabled": false}}, true},
	} {
		got, err := selfManagedCerts(c.chart, c.values)
		if err != nil || got != c.want {
			t.Errorf("%s: selfManagedCerts = %v, %v; want %v", name, got, err, c.want)
		}
	}
}

// olderChart packages a chart whose default is cert-manager, as 0.2.0's was.
func olderChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "quotagate")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: quotagate\nversion: 0.2.0\nappVersion: v0.2.0\n",
		"values.yaml": "certManager:\n  enabled: true\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path, err := PackageChart(dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return path
}
