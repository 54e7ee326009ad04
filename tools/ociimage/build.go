package ociimage

import (
	"context"
	"errors"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Options say what to build and where to write it.
type Options struct {
	Metadata
	// Root is the module's root directory (where go.mod is).
	Root string
	// LDFlags are go build's -ldflags: the Makefile's GO_LDFLAGS, which stamp Version
	// and Revision into the binaries.
	LDFlags string
	// BinDir receives the compiled binaries, in one <os>_<arch> directory per platform.
	BinDir string
	// LayoutDir receives the OCI layout; Archive, if set, the tar of it.
	LayoutDir string
	Archive   string
	// Platforms default to Platforms.
	Platforms []v1.Platform
}

// Result is what Build wrote.
type Result struct {
	Index       v1.ImageIndex
	Digest      v1.Hash // the index's
	Compiled    []Compiled
	Sizes       []PlatformSize
	ArchiveSize int64
}

// Build compiles the binaries, assembles the image index and writes the OCI layout and
// its archive.
func Build(ctx context.Context, o Options) (*Result, error) {
	if o.Version == "" || o.Revision == "" || o.Created.IsZero() {
		return nil, errors.New("building the image needs a version, a revision and a created time")
	}
	if o.Root == "" || o.BinDir == "" || o.LayoutDir == "" {
		return nil, errors.New("building the image needs the module root, a directory for the binaries and one for the OCI layout")
	}
	platforms := o.Platforms
	if len(platforms) == 0 {
		platforms = Platforms
	}
	compiled, err := Compile(ctx, o.Root, o.BinDir, o.LDFlags, platforms)
	if err != nil {
		return nil, err
	}
	idx, sizes, err := Assemble(o.Metadata, compiled)
	if err != nil {
		return nil, err
	}
	r := &Result{Index: idx, Compiled: compiled, Sizes: sizes}
	if r.Digest, err = idx.Digest(); err != nil {
		return nil, fmt.Errorf("digest of the image index: %w", err)
	}
	if err := WriteLayout(idx, o.LayoutDir, o.Version); err != nil {
		return nil, err
	}
	if o.Archive != "" {
		if r.ArchiveSize, err = WriteArchive(o.LayoutDir, o.Archive, o.Created); err != nil {
			return nil, err
		}
	}
	return r, nil
}
