package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/quotagate/quotagate/internal/version"
)

// PluginName is the kubectl plugin's binary, and the krew plugin's bin.
const PluginName = "kubectl-quotagate"

// CompletionName is the plugin's shell completion, by kubectl's convention for plugins
// (kubectl_complete-<plugin> on the PATH): it runs the plugin's __complete.
const CompletionName = "kubectl_complete-quotagate"

// Platform is one GOOS/GOARCH the plugin is built for.
type Platform struct {
	OS, Arch string
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatforms reads a comma-separated list of os/arch, each one of PluginPlatforms.
func ParsePlatforms(list string) ([]Platform, error) {
	var out []Platform
	for _, s := range strings.Split(list, ",") {
		i := slices.IndexFunc(PluginPlatforms, func(p Platform) bool { return p.String() == strings.TrimSpace(s) })
		if i < 0 {
			return nil, fmt.Errorf("platform %q: must be one of %v", s, PluginPlatforms)
		}
		out = append(out, PluginPlatforms[i])
	}
	return out, nil
}

// PluginPlatforms are the platforms a release builds the plugin for.
var PluginPlatforms = []Platform{
	{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"},
}

// PluginArchiveName is the archive of the plugin for p, as the release and the krew
// manifest name it.
func PluginArchiveName(p Platform) string {
	return fmt.Sprintf("%s_%s_%s.tar.gz", PluginName, p.OS, p.Arch)
}

// buildPlugin cross-compiles cmd/kubectl-quotagate and cmd/kubectl_complete-quotagate
// for p into a directory of dir (static, -trimpath, stamped with v and rev) and returns
// that directory.
func buildPlugin(ctx context.Context, repoRoot, dir string, p Platform, v, rev string) (string, error) {
	bin := filepath.Join(dir, p.OS+"_"+p.Arch)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", version.LDFlags(v, rev), "-o", bin+string(filepath.Separator),
		"./cmd/"+PluginName, "./cmd/"+CompletionName)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s for %s: %w\n%s", PluginName, p, err, out.String())
	}
	return bin, nil
}

// writePluginArchive packs the plugin and its completion from directory bin (and the
// repository's LICENSE, if it has one) into a .tar.gz at path, with modTime on every
// entry so that the same binaries pack to the same bytes.
func writePluginArchive(repoRoot, bin, path string, modTime time.Time) error {
	files := []struct{ name, src string }{{PluginName, filepath.Join(bin, PluginName)}, {CompletionName, filepath.Join(bin, CompletionName)}}
	if _, err := os.Stat(filepath.Join(repoRoot, "LICENSE")); err == nil {
		files = append(files, struct{ name, src string }{"LICENSE", filepath.Join(repoRoot, "LICENSE")})
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	gz.ModTime = modTime
	tw := tar.NewWriter(gz)
	for _, f := range files {
		b, err := os.ReadFile(f.src)
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if f.name == PluginName || f.name == CompletionName {
			mode = 0o755
		}
		hdr := &tar.Header{Name: f.name, Mode: mode, Size: int64(len(b)), ModTime: modTime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// fileSHA256 is the hex sha256 of the file at path.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
