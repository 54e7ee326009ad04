package release

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// The SBOM of each artifact that holds binaries, read from the artifact as published.

// writePluginSBOM writes the SBOM of a plugin archive (.tar.gz) beside it: the plugin,
// its completion and the LICENSE, as the archive holds them.
func writePluginSBOM(archive, version string) (string, error) {
	files, err := readPluginArchive(archive)
	if err != nil {
		return "", err
	}
	sum, err := fileSHA256(archive)
	if err != nil {
		return "", err
	}
	name := filepath.Base(archive)
	bom := newSBOM(sbomSubject{Type: cdx.ComponentTypeApplication, Name: name, Version: version, SHA256: sum}, files)
	out := archive + SBOMSuffix
	return filepath.Base(out), writeSBOM(bom, out)
}

func readPluginArchive(archive string) ([]sbomFile, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // read only
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", archive, err)
	}
	var files []sbomFile
	err = eachTarFile(gz, func(name string, content []byte) {
		files = append(files, readSBOMFile(name, "", content))
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", archive, err)
	}
	return files, nil
}

// writeImageSBOM writes the SBOM of the image's OCI archive into outDir: every file of
// every platform's image (the webhook and the manager binaries, /etc/passwd and
// /etc/group), each with its platform. The subject carries the image index's digest,
// by which the image is pulled, which it returns too.
func writeImageSBOM(archive, outDir, version string) (name, digest string, err error) {
	tmp, err := os.MkdirTemp("", "quotagate-image-sbom-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp) //nolint:errcheck // a temporary copy
	if err := untar(archive, tmp); err != nil {
		return "", "", fmt.Errorf("unpacking the image %s: %w", archive, err)
	}
	files, digest, err := readImageLayout(tmp)
	if err != nil {
		return "", "", fmt.Errorf("reading the image %s: %w", archive, err)
	}
	sum, err := fileSHA256(archive)
	if err != nil {
		return "", "", err
	}
	name = filepath.Base(archive)
	subject := sbomSubject{
		Type: cdx.ComponentTypeContainer, Name: name, Version: version, SHA256: sum,
		PURL: "pkg:oci/" + path.Base(ImageRepository) + "@" + url.QueryEscape(digest) +
			"?repository_url=" + url.QueryEscape(ImageRepository) + "&tag=" + url.QueryEscape(version),
		Properties: []cdx.Property{{Name: "quotagate:image.index.digest", Value: digest}, {Name: "quotagate:image.repository", Value: ImageRepository}},
	}
	out := filepath.Join(outDir, name+SBOMSuffix)
	return filepath.Base(out), digest, writeSBOM(newSBOM(subject, files), out)
}

// readImageLayout reads every regular file of every image of the OCI layout at dir,
// the index being its one entry, and returns them with the index's digest.
func readImageLayout(dir string) ([]sbomFile, string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, "", err
	}
	outer, err := p.ImageIndex()
	if err != nil {
		return nil, "", err
	}
	om, err := outer.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	if len(om.Manifests) != 1 {
		return nil, "", fmt.Errorf("the layout has %d entries, want the image index alone", len(om.Manifests))
	}
	idx, err := outer.ImageIndex(om.Manifests[0].Digest)
	if err != nil {
		return nil, "", err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	var files []sbomFile
	for _, d := range im.Manifests {
		if d.Platform == nil {
			return nil, "", fmt.Errorf("image %s has no platform", d.Digest)
		}
		platform := d.Platform.OS + "/" + d.Platform.Architecture
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, "", err
		}
		layers, err := img.Layers()
		if err != nil {
			return nil, "", err
		}
		for _, l := range layers {
			rc, err := l.Uncompressed()
			if err != nil {
				return nil, "", err
			}
			err = eachTarFile(rc, func(name string, content []byte) {
				files = append(files, readSBOMFile("/"+strings.TrimPrefix(name, "/"), platform, content))
			})
			_ = rc.Close()
			if err != nil {
				return nil, "", err
			}
		}
	}
	return files, om.Manifests[0].Digest.String(), nil
}

// eachTarFile calls f with the name and content of each regular file of the tar r.
func eachTarFile(r io.Reader, f func(name string, content []byte)) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		f(hdr.Name, content)
	}
}

// untar unpacks the tar at file into dir (which must exist), refusing paths that
// would leave it.
func untar(file, dir string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close() //nolint:errcheck // read only
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if !strings.HasPrefix(target, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("%s leaves the archive", hdr.Name)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil { //nolint:gosec // the release's own image
				_ = out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		}
	}
}
