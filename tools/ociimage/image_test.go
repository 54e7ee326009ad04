package ociimage_test

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/quotagate/quotagate/tools/ociimage"
)

// openIndex opens the image index of the OCI layout at dir, checking that the layout
// names it by the version, as `skopeo copy oci:dir:<version>` expects.
func openIndex(t *testing.T, dir string) v1.ImageIndex {
	t.Helper()
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("opening the OCI layout %s: %v", dir, err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("the layout's index.json lists %d manifests, want the one image index", len(im.Manifests))
	}
	d := im.Manifests[0]
	if d.MediaType != types.OCIImageIndex || d.Annotations[ociimage.RefName] != testMeta.Version {
		t.Fatalf("the layout's entry is a %s named %q, want an %s named %q", d.MediaType, d.Annotations[ociimage.RefName], types.OCIImageIndex, testMeta.Version)
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		t.Fatalf("opening the image index: %v", err)
	}
	return idx
}

// platformImages are the index's images by "os/arch".
func platformImages(t *testing.T, idx v1.ImageIndex) map[string]v1.Image {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	imgs := map[string]v1.Image{}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatalf("opening the %s image: %v", d.Platform, err)
		}
		imgs[d.Platform.String()] = img
	}
	return imgs
}

func TestIndexHasBothPlatformsAndTheLabels(t *testing.T) {
	opts, res := buildImage(t)
	idx := openIndex(t, opts.LayoutDir)
	if got, _ := idx.Digest(); got != res.Digest {
		t.Errorf("the layout holds index %s, Build reported %s", got, res.Digest)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", im.MediaType, types.OCIImageIndex)
	}
	var platforms []string
	for _, d := range im.Manifests {
		platforms = append(platforms, d.Platform.String())
		if d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s: media type %s, want %s", d.Platform, d.MediaType, types.OCIManifestSchema1)
		}
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
	want := map[string]string{
		"org.opencontainers.image.version":     testMeta.Version,
		"org.opencontainers.image.revision":    testMeta.Revision,
		"org.opencontainers.image.source":      "https://github.com/quotagate/quotagate",
		"org.opencontainers.image.title":       "quotagate",
		"org.opencontainers.image.description": ociimage.Description,
		"org.opencontainers.image.created":     "2026-01-02T03:04:05Z",
	}
	if diff := cmp.Diff(want, im.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
}

func TestImageConfig(t *testing.T) {
	opts, _ := buildImage(t)
	for platform, img := range platformImages(t, openIndex(t, opts.LayoutDir)) {
		t.Run(platform, func(t *testing.T) {
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if got := cf.OS + "/" + cf.Architecture; got != platform {
				t.Errorf("config is for %s, the index says %s", got, platform)
			}
			want := v1.Config{
				User:       "65532:65532",
				Entrypoint: []string{"/manager"},
				WorkingDir: "/",
				Env:        []string{"PATH=" + ociimage.Path},
				Labels:     ociimage.Labels(testMeta),
			}
			if diff := cmp.Diff(want, cf.Config); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			if !cf.Created.Equal(testMeta.Created) {
				t.Errorf("created %s, want the build's %s", cf.Created.Time, testMeta.Created)
			}
			if len(cf.History) != 2 {
				t.Errorf("history has %d entries, want one per layer (base, binaries)", len(cf.History))
			}
		})
	}
}

// fileInImage is one entry of an image's flattened filesystem.
type fileInImage struct {
	hdr  *tar.Header
	data []byte
}

// flatten reads the image's filesystem as the runtime would unpack it.
func flatten(t *testing.T, img v1.Image) map[string]fileInImage {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close() //nolint:errcheck // read only
	files := map[string]fileInImage{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("reading the image's files: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.TrimSuffix(hdr.Name, "/")] = fileInImage{hdr: hdr, data: data}
	}
}

var elfMachine = map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}

func TestImageFilesystem(t *testing.T) {
	opts, _ := buildImage(t)
	for platform, img := range platformImages(t, openIndex(t, opts.LayoutDir)) {
		t.Run(platform, func(t *testing.T) {
			files := flatten(t, img)
			names := slices.Sorted(maps.Keys(files))
			// Exactly these: no /bin/sh, no other program, nothing a shell could use.
			want := []string{"/etc", "/etc/group", "/etc/passwd", "/manager", "/tmp", "/webhook"}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("files in the image (-want +got):\n%s", diff)
			}
			if _, ok := files["/bin/sh"]; ok {
				t.Error("the image has /bin/sh")
			}
			for name, f := range files {
				if f.hdr.Uid != 0 || f.hdr.Gid != 0 {
					t.Errorf("%s is owned by %d:%d, want root (the nonroot user must not be able to change it)", name, f.hdr.Uid, f.hdr.Gid)
				}
			}
			if tmp := files["/tmp"].hdr; tmp == nil || tmp.Typeflag != tar.TypeDir || tmp.Mode != 0o1777 {
				t.Errorf("/tmp is %+v, want a directory with mode 1777", tmp)
			}
			if !bytes.Contains(files["/etc/passwd"].data, []byte("\nnonroot:x:65532:65532:")) {
				t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", files["/etc/passwd"].data)
			}
			if !bytes.Contains(files["/etc/group"].data, []byte("\nnonroot:x:65532:")) {
				t.Errorf("/etc/group has no nonroot group 65532:\n%s", files["/etc/group"].data)
			}
			for _, b := range ociimage.Binaries {
				checkBinary(t, b.Path, files[b.Path], elfMachine[platform])
			}
		})
	}
}

// checkBinary checks that f is an executable, static ELF program for machine.
func checkBinary(t *testing.T, path string, f fileInImage, machine elf.Machine) {
	t.Helper()
	if f.hdr == nil || f.hdr.Typeflag != tar.TypeReg {
		t.Errorf("%s is not a regular file in the image", path)
		return
	}
	if f.hdr.Mode != 0o755 {
		t.Errorf("%s has mode %o, want 755", path, f.hdr.Mode)
	}
	ef, err := elf.NewFile(bytes.NewReader(f.data))
	if err != nil {
		t.Errorf("%s is not an ELF file: %v", path, err)
		return
	}
	if ef.Machine != machine || ef.Type != elf.ET_EXEC {
		t.Errorf("%s is a %s %s, want an executable for %s", path, ef.Machine, ef.Type, machine)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s asks for a dynamic loader; the image has no libc, it must be static", path)
		}
	}
}
