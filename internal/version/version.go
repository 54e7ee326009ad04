// Package version holds quotagate's one version string and the commit it was built
// from. Both are set at build time by the linker, for every binary and the image alike:
// `make build` (and `make image`, `make release`, the Dockerfile) pass the Makefile's
// GO_LDFLAGS, which are LDFlags(VERSION, REVISION):
//
//	go build -ldflags "-s -w -X github.com/quotagate/quotagate/internal/version.version=v0.2.0 ..." ./cmd/...
//
// The same version is the chart's appVersion and the image's tag, so `manager version`,
// `webhook --version`, `kubectl quotagate version` and the quotagate_build_info metric
// all say which release runs.
package version

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Set with -ldflags -X; see LDFlags.
var (
	version  = "v0.0.0-dev"
	revision = ""
)

// importPath is this package's, for -ldflags -X.
const importPath = "github.com/quotagate/quotagate/internal/version"

// Info is what a binary says of itself.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the running binary's Info. Without a revision from the linker, the
// commit `go build` stamped into the binary (vcs.revision) is used, or "unknown".
func Get() Info {
	return Info{
		Version:   version,
		Revision:  Revision(),
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// Version is the release this binary belongs to, e.g. v0.2.0.
func Version() string { return version }

// Revision is the git commit the binary was built from.
func Revision() string {
	if revision != "" {
		return revision
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// String is the one line `version` commands print.
func (i Info) String() string {
	return fmt.Sprintf("%s (revision %s, %s, %s)", i.Version, i.Revision, i.GoVersion, i.Platform)
}

// LDFlags are the linker flags of every quotagate build (the Makefile's GO_LDFLAGS, the
// Dockerfile's, the release's): stripped (-s -w), with v and rev stamped in.
func LDFlags(v, rev string) string {
	return fmt.Sprintf("-s -w -X %s.version=%s -X %s.revision=%s", importPath, v, importPath, rev)
}

// NewBuildInfoCollector is the quotagate_build_info gauge: always 1, with the
// version, revision and Go version as labels, the Prometheus convention for joining
// a build onto every other series of the same target.
func NewBuildInfoCollector() prometheus.Collector {
	i := Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "quotagate_build_info",
		Help: "Always 1; its labels say which quotagate build is running.",
		ConstLabels: prometheus.Labels{
			"version":    i.Version,
			"revision":   i.Revision,
			"go_version": i.GoVersion,
		},
	})
	g.Set(1)
	return g
}

// Register adds the quotagate_build_info gauge to reg once; registering it again (a
// second server in the same process) is not an error.
func Register(reg prometheus.Registerer) error {
	if err := reg.Register(NewBuildInfoCollector()); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			return fmt.Errorf("registering quotagate_build_info: %w", err)
		}
	}
	return nil
}
