package ociimage

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// WriteLayout writes idx as the one entry of a new OCI layout at dir (whatever was there
// is removed), named version by its org.opencontainers.image.ref.name annotation.
func WriteLayout(idx v1.ImageIndex, dir, version string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the old layout: %w", err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the OCI layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefName: version})); err != nil {
		return fmt.Errorf("writing the image index into %s: %w", dir, err)
	}
	return nil
}

// WriteArchive packs the OCI layout at dir into one tar at file: the layout's files at
// the tar's root (oci-layout, index.json, blobs/), owned by root and dated mtime, in
// lexical order, so the same layout always gives the same tar. It returns the tar's size.
func WriteArchive(dir, file string, mtime time.Time) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".archive-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	tw := tar.NewWriter(tmp)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime.UTC().Truncate(time.Second)}
		if d.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			return tw.WriteHeader(hdr)
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close() //nolint:errcheck // read only
		info, err := f.Stat()
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, info.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = tmp.Close()
	} else {
		tmp.Close() //nolint:errcheck,gosec // the walk's error is the one to report
	}
	if err != nil {
		return 0, fmt.Errorf("packing %s into %s: %w", dir, file, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return 0, err
	}
	info, err := os.Stat(file)
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}
