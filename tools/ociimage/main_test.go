package ociimage_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/quotagate/quotagate/internal/version"
	"github.com/quotagate/quotagate/tools/ociimage"
)

// The metadata of the image the tests build: not the Makefile's, so that a label or a
// version string that ignored it would show.
var testMeta = ociimage.Metadata{
	Version:  "v9.8.7-test.1",
	Revision: "0123456789abcdef0123456789abcdef01234567",
	Created:  time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
}

// built is the one image every test opens: compiling both platforms takes a while, so
// it is built once per test run, into a directory TestMain removes.
var built struct {
	once   sync.Once
	dir    string
	opts   ociimage.Options
	result *ociimage.Result
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir) //nolint:errcheck,gosec // a temporary directory
	}
	os.Exit(code)
}

// buildImage builds the image with `make image`'s flags (GO_LDFLAGS is -s -w and the
// version's -X flags) the first time a test asks for it.
func buildImage(t *testing.T) (ociimage.Options, *ociimage.Result) {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "ociimage-test-"); built.err != nil {
			return
		}
		built.opts = ociimage.Options{
			Metadata:  testMeta,
			Root:      repoRoot(t),
			LDFlags:   version.LDFlags(testMeta.Version, testMeta.Revision),
			BinDir:    filepath.Join(built.dir, "bin"),
			LayoutDir: filepath.Join(built.dir, "oci"),
			Archive:   filepath.Join(built.dir, "quotagate.oci.tar"),
		}
		built.result, built.err = ociimage.Build(context.Background(), built.opts)
	})
	if built.err != nil {
		t.Fatalf("building the image: %v", built.err)
	}
	return built.opts, built.result
}

// repoRoot is the module's root: go test runs a package's tests in its directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}
