package deploy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/quotagate/quotagate/tools/ociimage"
)

// ContainerdImageName is the annotation on an index.json entry that containerd's
// `ctr images import` (what `kind load image-archive` and `k3d image import` run) names
// the imported image by; without it the image gets no name a pod could refer to.
const ContainerdImageName = "io.containerd.image.name"

// Image is an image reference as IMG gives it: a repository and a tag.
type Image struct {
	// Repository is IMG without its tag, as written (registry.example/team/quotagate).
	Repository string
	// Tag is IMG's tag, or the default tag ParseImage was given.
	Tag string
	ref name.Tag
}

// String is repository:tag.
func (i Image) String() string { return i.Repository + ":" + i.Tag }

// ParseImage parses IMG, registry/repository[:tag], as Docker does (no registry means
// Docker Hub). Without a tag it gets defaultTag (the version `make image` stamps). A
// digest is refused: the push computes it. opts are go-containerregistry's, e.g.
// name.Insecure for a registry that speaks plain HTTP.
func ParseImage(img, defaultTag string, opts ...name.Option) (Image, error) {
	if strings.TrimSpace(img) == "" {
		return Image{}, errors.New("no image: set IMG=registry/repository:tag (e.g. IMG=ghcr.io/me/quotagate:dev)")
	}
	if strings.Contains(img, "@") {
		return Image{}, fmt.Errorf("image %q names a digest: name a tag instead, the push computes the digest and the chart is pinned to it", img)
	}
	repo, tag := img, defaultTag
	if i := strings.LastIndex(img, ":"); i > strings.LastIndex(img, "/") {
		repo, tag = img[:i], img[i+1:]
	}
	if tag == "" {
		return Image{}, fmt.Errorf("image %q has no tag, and no default tag was given", img)
	}
	ref, err := name.NewTag(repo+":"+tag, opts...)
	if err != nil {
		return Image{}, fmt.Errorf("image %q: %w", img, err)
	}
	return Image{Repository: repo, Tag: tag, ref: ref}, nil
}

// Published is an image where the cluster can get it.
type Published struct {
	Image Image
	// Digest is the image index's.
	Digest v1.Hash
	// Pushed is true when the image is in the registry (pin it by Digest), false when it
	// is in an archive to load into the cluster's nodes (refer to it by tag).
	Pushed bool
}

// Values are the chart values that run the image: by digest when it was pushed (so a
// moved tag never changes what runs), by tag when it is loaded from an archive (a node's
// containerd knows it by the name it was imported under).
func (p Published) Values() map[string]any {
	img := map[string]any{"repository": p.Image.Repository, "tag": p.Image.Tag}
	if p.Pushed {
		img["digest"] = p.Digest.String()
	}
	return map[string]any{"image": img}
}

// Reference is what the chart's Deployments run: repository@digest or repository:tag.
func (p Published) Reference() string {
	if p.Pushed {
		return p.Image.Repository + "@" + p.Digest.String()
	}
	return p.Image.String()
}

// LayoutIndex is the one image index of the OCI layout at dir, the one `make image`
// writes.
func LayoutIndex(dir string) (v1.ImageIndex, error) {
	outer, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the OCI layout %s (run `make image` first): %w", dir, err)
	}
	m, err := outer.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, "index.json"), err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].MediaType != types.OCIImageIndex {
		return nil, fmt.Errorf("the OCI layout %s holds %d entries, want the one image index `make image` writes", dir, len(m.Manifests))
	}
	return outer.ImageIndex(m.Manifests[0].Digest)
}

// Push pushes idx, every platform, to img's tag, with the credentials of the standard
// Docker config unless opts set others (remote.WithAuth...). A registry on localhost or
// 127.0.0.1 is spoken to over plain HTTP, as Docker does.
func Push(idx v1.ImageIndex, img Image, opts ...remote.Option) (Published, error) {
	digest, err := idx.Digest()
	if err != nil {
		return Published{}, err
	}
	opts = append([]remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if err := remote.WriteIndex(img.ref, idx, opts...); err != nil {
		return Published{}, fmt.Errorf("pushing %s: %w", img, err)
	}
	return Published{Image: img, Digest: digest, Pushed: true}, nil
}

// WriteArchive writes idx as an OCI archive at file whose one entry is named img both
// for OCI tools (org.opencontainers.image.ref.name: the tag) and for containerd
// (io.containerd.image.name: repository:tag), for `kind load image-archive file` or `k3d
// image import file`. Its entries are dated mtime.
func WriteArchive(idx v1.ImageIndex, img Image, file string, mtime time.Time) (Published, error) {
	digest, err := idx.Digest()
	if err != nil {
		return Published{}, err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return Published{}, err
	}
	dir, err := os.MkdirTemp(filepath.Dir(file), ".layout-*")
	if err != nil {
		return Published{}, err
	}
	defer os.RemoveAll(dir) //nolint:errcheck // a temporary copy
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return Published{}, fmt.Errorf("creating an OCI layout in %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		ociimage.RefName: img.Tag, ContainerdImageName: img.String(),
	})); err != nil {
		return Published{}, fmt.Errorf("writing the image into %s: %w", dir, err)
	}
	if _, err := ociimage.WriteArchive(dir, file, mtime); err != nil {
		return Published{}, err
	}
	return Published{Image: img, Digest: digest}, nil
}
