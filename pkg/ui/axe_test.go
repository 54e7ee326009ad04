package ui_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// axeVersion is the axe-core (npm package) the tests check the views with. It is
// fetched with npm at test setup into the user's cache directory, never committed.
const axeVersion = "4.14.1"

// axeSource returns axe-core's axe.min.js, from the cache or fetched with `npm pack`.
func axeSource() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "quotagate", "axe-core-"+axeVersion)
	js := filepath.Join(dir, "axe.min.js")
	if b, err := os.ReadFile(js); err == nil {
		return string(b), nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("npm", "pack", "axe-core@"+axeVersion, "--pack-destination", dir, "--silent")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("fetching axe-core %s with npm pack (the browser tests check accessibility with it; they need npm and the npm registry): %w", axeVersion, err)
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 {
		return "", fmt.Errorf("npm pack axe-core@%s printed no file name", axeVersion)
	}
	tgz := filepath.Join(dir, lines[len(lines)-1])
	defer func() { _ = os.Remove(tgz) }()
	f, err := os.Open(tgz)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return "", err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			return "", fmt.Errorf("reading %s for package/axe.min.js: %w", tgz, err)
		}
		if h.Name != "package/axe.min.js" {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(js, b, 0o644); err != nil {
			return "", err
		}
		return string(b), nil
	}
}

// checkAccessibility runs axe-core on the page and fails the test on any serious or
// critical violation.
func checkAccessibility(t *testing.T, ctx context.Context, w *world, view string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](w.axe)); err != nil {
		t.Fatalf("loading axe-core into %s: %v", view, err)
	}
	violations, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`axe.run(document, {resultTypes: ["violations"]}).then(r =>
		r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
			.map(v => v.impact + " " + v.id + ": " + v.help + " at " + v.nodes.map(n => n.target.join(" ")).join(", ")))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("running axe-core on %s: %v", view, err)
	}
	for _, v := range violations {
		t.Errorf("%s: %s", view, v)
	}
}
