package ociimage_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/quotagate/quotagate/tools/ociimage"
)

// unpack extracts the tar at file into dir, checking that every entry is root's and
// dated the build's created time.
func unpack(t *testing.T, file, dir string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // read only
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		if hdr.Uid != 0 || hdr.Gid != 0 || !hdr.ModTime.Equal(testMeta.Created) {
			t.Errorf("%s: owner %d:%d, time %s; want root and the created time", hdr.Name, hdr.Uid, hdr.Gid, hdr.ModTime)
		}
		target := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if !strings.HasPrefix(target, dir+string(filepath.Separator)) {
			t.Fatalf("%s: entry %q leaves the archive", file, hdr.Name)
		}
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, data, os.FileMode(hdr.Mode)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestArchiveIsTheLayout(t *testing.T) {
	opts, res := buildImage(t)
	dir := t.TempDir()
	unpack(t, opts.Archive, dir)
	idx := openIndex(t, dir)
	if got, _ := idx.Digest(); got != res.Digest {
		t.Errorf("the archive holds index %s, the layout %s", got, res.Digest)
	}
	if info, err := os.Stat(opts.Archive); err != nil || info.Size() != res.ArchiveSize {
		t.Errorf("archive size: Build said %d, the file is %v (%v)", res.ArchiveSize, info, err)
	}
}

// TestReproducible assembles and writes the image a second time from the same binaries:
// the index digest and the archive's bytes must not change.
func TestReproducible(t *testing.T) {
	opts, res := buildImage(t)
	idx, _, err := ociimage.Assemble(testMeta, res.Compiled)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Digest(); got != res.Digest {
		t.Fatalf("a second assembly gives index %s, the first gave %s", got, res.Digest)
	}
	dir := t.TempDir()
	archive := filepath.Join(dir, "again.oci.tar")
	if err := ociimage.WriteLayout(idx, filepath.Join(dir, "oci"), testMeta.Version); err != nil {
		t.Fatal(err)
	}
	if _, err := ociimage.WriteArchive(filepath.Join(dir, "oci"), archive, testMeta.Created); err != nil {
		t.Fatal(err)
	}
	if a, b := fileSum(t, opts.Archive), fileSum(t, archive); a != b {
		t.Errorf("two archives of one build differ: %x and %x", a, b)
	}
}

func fileSum(t *testing.T, file string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestBinariesSayTheirVersion runs the image's binaries for this machine's platform:
// both are stamped with the build's version and revision.
func TestBinariesSayTheirVersion(t *testing.T) {
	opts, _ := buildImage(t)
	platform := runtime.GOOS + "/" + runtime.GOARCH
	img, ok := platformImages(t, openIndex(t, opts.LayoutDir))[platform]
	if !ok {
		t.Fatalf("the image has no %s variant to run here; it has %v", platform, ociimage.Platforms)
	}
	files := flatten(t, img)
	dir := t.TempDir()
	for path, args := range map[string][]string{"/webhook": {"--version"}, "/manager": {"version"}} {
		bin := filepath.Join(dir, path[1:])
		if err := os.WriteFile(bin, files[path].data, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", path, strings.Join(args, " "), err, out)
		}
		want := testMeta.Version + " (revision " + testMeta.Revision + ","
		if !bytes.HasPrefix(out, []byte(want)) {
			t.Errorf("%s %s printed %q, want it to start with %q", path, strings.Join(args, " "), out, want)
		}
	}
}
