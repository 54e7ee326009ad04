package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// rootfs holds the base's files; the Dockerfile copies the same directory.
//
//go:embed rootfs/etc/passwd rootfs/etc/group
var rootfs embed.FS

// RootfsDir is where the base's files are, relative to the module root.
const RootfsDir = "tools/ociimage/rootfs"

// entry is one file or directory of a layer.
type entry struct {
	name string // relative, without a leading slash
	mode int64  // permission bits, and sticky for /tmp
	dir  bool
	data []byte // a file's content
	src  string // or the file it is read from
}

// baseEntries are the base layer: passwd and group with the nonroot user, and /tmp.
func baseEntries() ([]entry, error) {
	es := []entry{{name: "etc/", mode: 0o755, dir: true}}
	for _, f := range []string{"etc/passwd", "etc/group"} {
		b, err := fs.ReadFile(rootfs, path.Join("rootfs", f))
		if err != nil {
			return nil, fmt.Errorf("reading the base's %s: %w", f, err)
		}
		es = append(es, entry{name: f, mode: 0o644, data: b})
	}
	return append(es, entry{name: "tmp/", mode: 0o1777, dir: true}), nil
}

// binaryEntries are the binaries layer: each binary at its Path, from files[Path].
func binaryEntries(files map[string]string) ([]entry, error) {
	var es []entry
	for _, b := range Binaries {
		src, ok := files[b.Path]
		if !ok {
			return nil, fmt.Errorf("no compiled file for %s", b.Path)
		}
		es = append(es, entry{name: b.Path[1:], mode: 0o755, src: src})
	}
	return es, nil
}

// layer is a gzipped OCI layer of the entries, and its uncompressed size. Every entry
// is owned by root and dated m.Created, and gzip's header is left empty, so the same
// entries always give the same digest.
func layer(es []entry, m Metadata) (v1.Layer, int64, error) {
	var raw countingBuffer
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, 0, err
	}
	tw := tar.NewWriter(io.MultiWriter(zw, &raw))
	for _, e := range es {
		if err := writeEntry(tw, e, m); err != nil {
			return nil, 0, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, 0, err
	}
	if err := zw.Close(); err != nil {
		return nil, 0, err
	}
	blob := gz.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(blob)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, 0, fmt.Errorf("making a layer: %w", err)
	}
	return l, raw.n, nil
}

func writeEntry(tw *tar.Writer, e entry, m Metadata) error {
	hdr := &tar.Header{
		Name:    e.name,
		Mode:    e.mode,
		ModTime: m.Created.UTC().Truncate(time.Second),
	}
	if e.dir {
		hdr.Typeflag = tar.TypeDir
		return tw.WriteHeader(hdr)
	}
	hdr.Typeflag = tar.TypeReg
	data := e.data
	if e.src != "" {
		var err error
		if data, err = os.ReadFile(e.src); err != nil {
			return fmt.Errorf("reading %s for %s: %w", e.src, e.name, err)
		}
	}
	hdr.Size = int64(len(data))
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("writing %s: %w", e.name, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", e.name, err)
	}
	return nil
}

// countingBuffer counts what is written to it and keeps none of it.
type countingBuffer struct{ n int64 }

func (c *countingBuffer) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}
