package release

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/quotagate/quotagate/internal/version"
)

// Names of the artifacts besides the chart (quotagate-X.Y.Z.tgz), the plugin archives
// (PluginArchiveName) and the image tarballs.
const (
	CRDsFile      = "quotagate-crds.yaml"
	InstallFile   = "install.yaml"
	KrewFile      = "quotagate.yaml"
	ChecksumsFile = "checksums.txt"
)

// Options say what to release and where.
type Options struct {
	// RepoRoot is the quotagate repository the artifacts are built from.
	RepoRoot string
	// OutDir receives the artifacts; it is emptied first, so that nothing of an
	// earlier release is published with this one.
	OutDir string
	// Version is the release, vX.Y.Z (see ParseVersion).
	Version string
	// Revision is the git commit stamped into the binaries.
	Revision string
	// ModTime is the time given to every file inside the archives (the commit's time
	// makes them reproducible).
	ModTime time.Time
	// Platforms the plugin is built for; nil means PluginPlatforms.
	Platforms []Platform
	// ImageDir is where `make image` left quotagate-<Version>.oci.tar; empty means
	// <RepoRoot>/_output/image.
	ImageDir string
	// Log receives a line per step with its duration; nil discards them.
	Log io.Writer
}

// Artifact is one file of the release.
type Artifact struct {
	Name string
	Size int64
}

// Run writes the release for o.Version into o.OutDir and returns its artifacts, in the
// order written: checksums.txt over all the others, then the provenance statement over
// them all.
func Run(ctx context.Context, o Options) ([]Artifact, error) {
	chartVersion, err := ParseVersion(o.Version)
	if err != nil {
		return nil, err
	}
	if o.Platforms == nil {
		o.Platforms = PluginPlatforms
	}
	if o.ImageDir == "" {
		o.ImageDir = filepath.Join(o.RepoRoot, "_output", "image")
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Revision == "" {
		o.Revision = "unknown"
	}
	if err := os.RemoveAll(o.OutDir); err != nil {
		return nil, fmt.Errorf("emptying %s: %w", o.OutDir, err)
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, err
	}
	buildDir, err := os.MkdirTemp("", "quotagate-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(buildDir)

	out := func(name string) string { return filepath.Join(o.OutDir, name) }
	var names []string
	step := func(what string, f func() ([]string, error)) error {
		start := time.Now()
		written, err := f()
		if err != nil {
			return err
		}
		names = append(names, written...)
		fmt.Fprintf(o.Log, "%-40s %6.1fs\n", what, time.Since(start).Seconds())
		return nil
	}
	one := func(name string, f func(path string) error) func() ([]string, error) {
		return func() ([]string, error) { return []string{name}, f(out(name)) }
	}

	steps := []struct {
		what string
		f    func() ([]string, error)
	}{
		{"chart (helm package)", func() ([]string, error) {
			path, err := packageChart(o.RepoRoot, o.OutDir, chartVersion, o.Version, o.ModTime)
			return []string{filepath.Base(path)}, err
		}},
		{"CRDs", one(CRDsFile, func(path string) error { return writeCRDs(o.RepoRoot, path) })},
		{"install.yaml (kustomize config/default)", one(InstallFile, func(path string) error {
			return writeInstall(o.RepoRoot, o.Version, path)
		})},
	}
	for _, s := range steps {
		if err := step(s.what, s.f); err != nil {
			return nil, err
		}
	}

	sums := make([]string, len(o.Platforms))
	for i, p := range o.Platforms {
		err := step("kubectl plugin "+p.String(), func() ([]string, error) {
			bin, err := buildPlugin(ctx, o.RepoRoot, buildDir, p, o.Version, o.Revision)
			if err != nil {
				return nil, err
			}
			name := PluginArchiveName(p)
			if err := writePluginArchive(o.RepoRoot, bin, out(name), o.ModTime); err != nil {
				return nil, fmt.Errorf("packing %s: %w", name, err)
			}
			if sums[i], err = fileSHA256(out(name)); err != nil {
				return nil, err
			}
			sbom, err := writePluginSBOM(out(name), o.Version)
			return []string{name, sbom}, err
		})
		if err != nil {
			return nil, err
		}
	}
	if err := step("krew manifest", one(KrewFile, func(path string) error {
		return writeKrewManifest(path, o.Version, o.Platforms, sums)
	})); err != nil {
		return nil, err
	}
	var imageDigest string
	if err := step("image and its SBOM", func() ([]string, error) {
		images, err := copyImages(o.ImageDir, o.OutDir, o.Version, o.Log)
		if err != nil {
			return nil, err
		}
		written := images
		for _, img := range images {
			sbom, digest, err := writeImageSBOM(out(img), o.OutDir, o.Version)
			if err != nil {
				return nil, err
			}
			written, imageDigest = append(written, sbom), digest
		}
		return written, nil
	}); err != nil {
		return nil, err
	}
	if err := step("checksums", one(ChecksumsFile, func(path string) error {
		return writeChecksums(o.OutDir, names, path)
	})); err != nil {
		return nil, err
	}
	if err := step("provenance (in-toto, SLSA v1)", one(ProvenanceFile, func(path string) error {
		subjects, err := provenanceSubjects(o.OutDir, names, imageDigest, o.Version)
		if err != nil {
			return err
		}
		st, err := newProvenance(provenanceInput{
			Version: o.Version, Revision: o.Revision, Subjects: subjects, BuilderID: builderID(),
			Settings: map[string]any{"plugin": map[string]any{
				"CGO_ENABLED": "0", "flags": "-trimpath", "ldflags": version.LDFlags(o.Version, o.Revision),
				"platforms": platformList(o.Platforms),
			}},
		})
		if err != nil {
			return err
		}
		return writeProvenance(st, path)
	})); err != nil {
		return nil, err
	}
	names = slices.Compact(names)

	artifacts := make([]Artifact, 0, len(names))
	for _, n := range names {
		fi, err := os.Stat(out(n))
		if err != nil {
			return nil, err
		}
		artifacts = append(artifacts, Artifact{Name: n, Size: fi.Size()})
	}
	return artifacts, nil
}

// platformList is platforms as os/arch strings, for the provenance.
func platformList(platforms []Platform) []any {
	out := make([]any, len(platforms))
	for i, p := range platforms {
		out[i] = p.String()
	}
	return out
}

// copyImages copies the image tarballs of version v that `make image` wrote into dir
// (quotagate-<v>.oci.tar). Tarballs of other versions are left behind, and said so.
func copyImages(dir, outDir, v string, log io.Writer) ([]string, error) {
	tars, err := filepath.Glob(filepath.Join(dir, "*.oci.tar"))
	if err != nil {
		return nil, err
	}
	var copied []string
	for _, src := range tars {
		name := filepath.Base(src)
		if !strings.Contains(name, "-"+v+".") {
			fmt.Fprintf(log, "  skipping %s: not version %s\n", name, v)
			continue
		}
		if err := copyFile(src, filepath.Join(outDir, name)); err != nil {
			return nil, fmt.Errorf("copying the image %s: %w", name, err)
		}
		copied = append(copied, name)
	}
	if len(copied) == 0 {
		fmt.Fprintf(log, "  no image tarball for %s in %s (make image writes it)\n", v, dir)
	}
	return copied, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// writeChecksums writes `sha256sum` lines ("<hex>  <name>") for the named files of dir.
func writeChecksums(dir string, names []string, path string) error {
	var b strings.Builder
	for _, n := range names {
		sum, err := fileSHA256(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, n)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// FormatSize is n bytes in a unit a person reads at a glance.
func FormatSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}
