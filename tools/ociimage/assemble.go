package ociimage

import (
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// PlatformSize is what one platform's image weighs.
type PlatformSize struct {
	Platform v1.Platform
	// Compressed is what a node pulls: the manifest, the config and the gzipped layers.
	Compressed int64
	// Uncompressed is the layers' tars unpacked: about what the node stores.
	Uncompressed int64
}

// Assemble puts each platform's binaries on the base and makes the image index, with
// the Labels as the index's annotations.
func Assemble(m Metadata, compiled []Compiled) (v1.ImageIndex, []PlatformSize, error) {
	base, err := baseEntries()
	if err != nil {
		return nil, nil, err
	}
	baseLayer, baseSize, err := layer(base, m)
	if err != nil {
		return nil, nil, fmt.Errorf("base layer: %w", err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var sizes []PlatformSize
	for _, c := range compiled {
		img, size, err := platformImage(m, c, baseLayer, baseSize)
		if err != nil {
			return nil, nil, fmt.Errorf("image for %s: %w", c.Platform, err)
		}
		p := c.Platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &p},
		})
		sizes = append(sizes, size)
	}
	annotated, ok := mutate.Annotations(idx, Labels(m)).(v1.ImageIndex)
	if !ok {
		return nil, nil, fmt.Errorf("annotating the index: not an index")
	}
	return annotated, sizes, nil
}

// platformImage is one platform's image: the base layer, then the binaries.
func platformImage(m Metadata, c Compiled, base v1.Layer, baseSize int64) (v1.Image, PlatformSize, error) {
	size := PlatformSize{Platform: c.Platform}
	es, err := binaryEntries(c.Files)
	if err != nil {
		return nil, size, err
	}
	bins, binsSize, err := layer(es, m)
	if err != nil {
		return nil, size, fmt.Errorf("binaries layer: %w", err)
	}
	created := v1.Time{Time: m.Created.UTC()}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{
			Created: created, CreatedBy: "quotagate base: /etc/passwd, /etc/group (nonroot 65532), /tmp",
		}},
		mutate.Addendum{Layer: bins, History: v1.History{
			Created: created, CreatedBy: "quotagate binaries: " + binaryPaths(),
		}},
	)
	if err != nil {
		return nil, size, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, size, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = c.Platform.OS, c.Platform.Architecture, c.Platform.Variant
	cf.Created = created
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: append([]string(nil), Entrypoint...),
		WorkingDir: WorkingDir,
		Env:        []string{"PATH=" + Path},
		Labels:     Labels(m),
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, size, err
	}
	if size.Compressed, err = img.Size(); err != nil {
		return nil, size, err
	}
	mf, err := img.Manifest()
	if err != nil {
		return nil, size, err
	}
	size.Compressed += mf.Config.Size
	for _, l := range mf.Layers {
		size.Compressed += l.Size
	}
	size.Uncompressed = baseSize + binsSize
	return img, size, nil
}

func binaryPaths() string {
	ps := make([]string, 0, len(Binaries))
	for _, b := range Binaries {
		ps = append(ps, b.Path)
	}
	return strings.Join(ps, " ")
}
