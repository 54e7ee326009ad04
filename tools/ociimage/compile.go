package ociimage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Compiled are one platform's binaries: the file each image path is built into.
type Compiled struct {
	Platform v1.Platform
	Files    map[string]string // Binary.Path → file
}

// Compile cross-compiles the Binaries of the module at root for each platform, static
// (CGO_ENABLED=0), with -trimpath and ldflags, into binDir/<os>_<arch>/.
func Compile(ctx context.Context, root, binDir, ldflags string, platforms []v1.Platform) ([]Compiled, error) {
	pkgs := make([]string, 0, len(Binaries))
	for _, b := range Binaries {
		if filepath.Base(b.Package) != b.Path[1:] {
			return nil, fmt.Errorf("binary %s: its package %s would build into %s", b.Path, b.Package, filepath.Base(b.Package))
		}
		pkgs = append(pkgs, b.Package)
	}
	var out []Compiled
	for _, p := range platforms {
		dir, err := filepath.Abs(filepath.Join(binDir, p.OS+"_"+p.Architecture))
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		args := append([]string{"build", "-trimpath", "-ldflags", ldflags, "-o", dir + "/"}, pkgs...)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build for %s: %w\n%s", p, err, strings.TrimSpace(string(msg)))
		}
		c := Compiled{Platform: p, Files: map[string]string{}}
		for _, b := range Binaries {
			c.Files[b.Path] = filepath.Join(dir, b.Path[1:])
		}
		out = append(out, c)
	}
	return out, nil
}
