package release

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// The SBOMs of a release are CycloneDX 1.6 JSON, one beside each artifact that holds
// binaries (<artifact>.cdx.json): each plugin archive, and the image. They are read from
// what was built, not from go.mod: each Go binary's build information (debug/buildinfo)
// names the main module, every module linked into it with its version and go.sum hash,
// the Go toolchain and the build settings, so the SBOM lists exactly what the binary
// was built with. Other files (the image's /etc/passwd) are listed with their SHA-256.
//
// An SBOM has the artifact as its subject (metadata.component), a component per binary
// and per file in it, and one per module (the Go standard library included) that a
// dependency links to each binary that links it. No time and no random serial number
// are written, so that one commit releases the same bytes each time.

// SBOMSuffix is appended to an artifact's name to name its SBOM.
const SBOMSuffix = ".cdx.json"

// sbomFile is one file of an artifact: a Go binary (build info set) or another file.
type sbomFile struct {
	Name     string // path in the artifact, e.g. kubectl-quotagate or /manager
	Platform string // os/arch, "" when the artifact has one
	SHA256   string // hex
	Build    *buildinfo.BuildInfo
}

// readSBOMFile reads one file of an artifact: its hash, and its build info when it is a
// Go binary.
func readSBOMFile(name, platform string, content []byte) sbomFile {
	sum := sha256.Sum256(content)
	f := sbomFile{Name: name, Platform: platform, SHA256: hex.EncodeToString(sum[:])}
	if bi, err := buildinfo.Read(bytes.NewReader(content)); err == nil {
		f.Build = bi
	}
	return f
}

// sbomSubject is what an SBOM describes: an artifact of the release.
type sbomSubject struct {
	Type    cdx.ComponentType // application (a plugin archive) or container (the image)
	Name    string            // the artifact's file name
	Version string            // the release
	PURL    string
	SHA256  string // the artifact's, hex
	// Properties describe the subject further (the image's index digest).
	Properties []cdx.Property
}

// newSBOM is the CycloneDX BOM of subject and its files.
func newSBOM(subject sbomSubject, files []sbomFile) *cdx.BOM {
	bom := cdx.NewBOM()
	bom.JSONSchema = "http://cyclonedx.org/schema/bom-1.6.schema.json"
	bom.SpecVersion = cdx.SpecVersion1_6
	top := cdx.Component{
		BOMRef: subject.Name, Type: subject.Type, Name: subject.Name, Version: subject.Version, PackageURL: subject.PURL,
		Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: subject.SHA256}},
	}
	if len(subject.Properties) > 0 {
		top.Properties = &subject.Properties
	}
	bom.Metadata = &cdx.Metadata{
		Component: &top,
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Name: "quotagate make release", Version: subject.Version,
			PackageURL: "pkg:golang/github.com/quotagate/quotagate/tools/release@" + subject.Version,
		}}},
	}

	var components []cdx.Component
	modules := map[string]cdx.Component{}
	deps := []cdx.Dependency{}
	var fileRefs []string
	for _, f := range files {
		ref := f.Name
		if f.Platform != "" {
			ref = f.Platform + ":" + f.Name
		}
		fileRefs = append(fileRefs, ref)
		c := cdx.Component{BOMRef: ref, Type: cdx.ComponentTypeFile, Name: f.Name,
			Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: f.SHA256}}}
		var props []cdx.Property
		if f.Platform != "" {
			props = append(props, cdx.Property{Name: "quotagate:platform", Value: f.Platform})
		}
		if f.Build != nil {
			c.Type = cdx.ComponentTypeApplication
			// The release's version names what was built, whatever the build recorded:
			// a clean checkout of an untagged commit records a pseudo-version
			// (v0.0.0-<time>-<commit>), a dirty one "(devel)". What it recorded is kept.
			c.Version = subject.Version
			c.PackageURL = goPURL(f.Build.Path, c.Version)
			props = append(props, buildProperties(f.Build)...)
			if v := f.Build.Main.Version; v != "" && v != subject.Version {
				props = append(props, cdx.Property{Name: "quotagate:go.main.version", Value: v})
			}
			var linked []string
			for _, m := range linkedModules(f.Build) {
				if _, ok := modules[m.BOMRef]; !ok {
					modules[m.BOMRef] = m
				}
				linked = append(linked, m.BOMRef)
			}
			slices.Sort(linked)
			deps = append(deps, cdx.Dependency{Ref: ref, Dependencies: &linked})
		}
		if len(props) > 0 {
			c.Properties = &props
		}
		components = append(components, c)
	}
	refs := make([]string, 0, len(modules))
	for ref := range modules {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	for _, ref := range refs {
		components = append(components, modules[ref])
	}
	bom.Components = &components
	deps = append([]cdx.Dependency{{Ref: top.BOMRef, Dependencies: &fileRefs}}, deps...)
	bom.Dependencies = &deps
	return bom
}

// linkedModules are the modules a binary links, as library components: the main
// module's dependencies (a replaced one as its replacement, which is what was built)
// and the Go standard library of its toolchain. Their bom-ref is their package URL.
func linkedModules(bi *buildinfo.BuildInfo) []cdx.Component {
	var out []cdx.Component
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		c := cdx.Component{Type: cdx.ComponentTypeLibrary, Name: m.Path, Version: m.Version, PackageURL: goPURL(m.Path, m.Version)}
		c.BOMRef = c.PackageURL
		if m.Sum != "" {
			c.Properties = &[]cdx.Property{{Name: "quotagate:go.sum", Value: m.Sum}}
		}
		if d.Replace != nil {
			c.Properties = appendProperty(c.Properties, cdx.Property{Name: "quotagate:replaces", Value: d.Path + "@" + d.Version})
		}
		out = append(out, c)
	}
	std := cdx.Component{Type: cdx.ComponentTypeLibrary, Name: "stdlib", Version: bi.GoVersion, PackageURL: goPURL("stdlib", bi.GoVersion)}
	std.BOMRef = std.PackageURL
	return append(out, std)
}

func appendProperty(props *[]cdx.Property, p cdx.Property) *[]cdx.Property {
	if props == nil {
		return &[]cdx.Property{p}
	}
	out := append(*props, p)
	return &out
}

// buildProperties are the settings a binary was built with (GOOS, GOARCH, CGO_ENABLED,
// -trimpath, -ldflags, vcs.revision, ...) and its Go toolchain.
func buildProperties(bi *buildinfo.BuildInfo) []cdx.Property {
	props := []cdx.Property{{Name: "quotagate:go.version", Value: bi.GoVersion}, {Name: "quotagate:go.package", Value: bi.Path}}
	for _, s := range bi.Settings {
		props = append(props, cdx.Property{Name: "quotagate:go.build." + s.Key, Value: s.Value})
	}
	return props
}

// goPURL is a Go module's package URL: pkg:golang/<path>@<version>, its path's slashes
// kept and other characters escaped as the purl spec says.
func goPURL(modPath, version string) string {
	parts := strings.Split(modPath, "/")
	for i, p := range parts {
		parts[i] = purlEscape(p)
	}
	return "pkg:golang/" + path.Join(parts...) + "@" + purlEscape(version)
}

func purlEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(".-_~", r):
			b.WriteRune(r)
		default:
			for _, c := range []byte(string(r)) {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
	}
	return b.String()
}

// writeSBOM writes bom as indented JSON to path.
func writeSBOM(bom *cdx.BOM, path string) error {
	var buf bytes.Buffer
	if err := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).EncodeVersion(bom, cdx.SpecVersion1_6); err != nil {
		return fmt.Errorf("encoding the SBOM %s: %w", path, err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
