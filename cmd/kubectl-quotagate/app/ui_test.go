package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/quotagate/quotagate/internal/testbed"
)

// The browser is opened the way each platform the plugin ships for does it.
func TestBrowserCommand(t *testing.T) {
	const url = "http://127.0.0.1:8089/?token=t"
	for goos, want := range map[string][]string{
		"darwin":  {"open", url},
		"linux":   {"xdg-open", url},
		"freebsd": {"xdg-open", url},
		"windows": {"rundll32", "url.dll,FileProtocolHandler", url},
	} {
		name, args := browserCommand(goos, url)
		if diff := cmp.Diff(want, append([]string{name}, args...)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", goos, diff)
		}
	}
}

// testUIOpens runs `ui --open` as a user does, with a browser opener of this platform
// on the PATH that notes what it was asked to open: the URL the command prints, token
// and all.
func testUIOpens(t *testing.T, kubeconfig string) {
	opener, _ := browserCommand(runtime.GOOS, "")
	dir := t.TempDir()
	opened := filepath.Join(dir, "opened")
	script := "#!/bin/sh\necho \"$@\" > " + opened + "\n"
	if err := os.WriteFile(filepath.Join(dir, opener), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))

	out, stop := startReal(t, "--kubeconfig", kubeconfig, "ui", "-n", "team-a", "--open")
	waitOutput(t, out, `Serving the quotagate UI at http://\S+`)
	url := regexp.MustCompile(`http://\S+`).FindString(out.String())
	var got string
	testbed.Poll(t, pollTimeout, opener+" to be run", func(context.Context) (bool, error) {
		b, err := os.ReadFile(opened)
		got = strings.TrimSpace(string(b))
		return err == nil && got != "", nil
	})
	if got != url {
		t.Errorf("%s was asked to open %q, want the URL printed, %q", opener, got, url)
	}
	waitOutput(t, out, `(?m)^Opened it with `+regexp.QuoteMeta(opener)+`$`)
	if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("ui: %v", err)
	}
}
