// Command release writes quotagate's release artifacts for one version into a
// directory (see tools/release); `make release VERSION=vX.Y.Z` runs it.
//
//	go run ./hack/release -version v1.2.3 -revision "$(git rev-parse HEAD)" -out _output/release
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/quotagate/quotagate/tools/release"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run() error {
	var o release.Options
	flag.StringVar(&o.Version, "version", "", "The release, vX.Y.Z: the git tag, the image tag and the chart's appVersion.")
	flag.StringVar(&o.Revision, "revision", "", "The git commit stamped into the binaries; empty means HEAD.")
	flag.StringVar(&o.OutDir, "out", "_output/release", "The directory to write the artifacts to (emptied first).")
	flag.StringVar(&o.RepoRoot, "repo", ".", "The quotagate repository to release.")
	platforms := flag.String("platforms", "", "The plugin's platforms, os/arch comma-separated (default: all of a release's).")
	flag.Parse()
	if *platforms != "" {
		var err error
		if o.Platforms, err = release.ParsePlatforms(*platforms); err != nil {
			return fmt.Errorf("-platforms: %w", err)
		}
	}
	if _, err := release.ParseVersion(o.Version); err != nil {
		return fmt.Errorf("%w (run make release VERSION=vX.Y.Z)", err)
	}

	var err error
	if o.RepoRoot, err = filepath.Abs(o.RepoRoot); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(o.RepoRoot, "charts", "quotagate", "Chart.yaml")); err != nil {
		return fmt.Errorf("-repo %s is not the quotagate repository: %w", o.RepoRoot, err)
	}
	if o.OutDir, err = filepath.Abs(o.OutDir); err != nil {
		return err
	}
	if o.Revision == "" {
		o.Revision = git(o.RepoRoot, "rev-parse", "HEAD")
	}
	o.ModTime = commitTime(o.RepoRoot, o.Revision)
	o.Log = os.Stdout

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	fmt.Printf("quotagate %s (revision %s) into %s\n", o.Version, o.Revision, o.OutDir)
	artifacts, err := release.Run(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("%-40s %6.1fs\n\n", "total", time.Since(start).Seconds())
	var total int64
	for _, a := range artifacts {
		fmt.Printf("%-40s %10s\n", a.Name, release.FormatSize(a.Size))
		total += a.Size
	}
	fmt.Printf("%-40s %10s\n", fmt.Sprintf("%d files", len(artifacts)), release.FormatSize(total))
	return nil
}

// git runs git in dir and returns its output, or "" if git fails (no git, no checkout).
func git(dir string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// commitTime is the commit time of rev, the time inside the archives, so that a commit
// releases the same bytes each time; without git, the Unix epoch.
func commitTime(dir, rev string) time.Time {
	if rev == "" {
		return time.Unix(0, 0).UTC()
	}
	secs, err := strconv.ParseInt(git(dir, "log", "-1", "--format=%ct", rev), 10, 64)
	if err != nil {
		return time.Unix(0, 0).UTC()
	}
	return time.Unix(secs, 0).UTC()
}
