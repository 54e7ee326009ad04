package release_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-cmp/cmp"
	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"

	rel "github.com/quotagate/quotagate/tools/release"
)

// module is one module a binary was built with, as `go version -m` lists it.
type module struct{ Path, Version string }

// goVersionM is what `go version -m` says of the binary at path: its Go version and
// the modules it was built with (a replaced one as its replacement).
func goVersionM(t *testing.T, path string) (goVersion string, mods []module) {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", path).Output()
	if err != nil {
		t.Fatalf("go version -m %s: %v", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && strings.HasSuffix(f[0], ":"):
			goVersion = f[1]
		case len(f) >= 3 && f[0] == "dep":
			mods = append(mods, module{f[1], f[2]})
		case len(f) >= 3 && f[0] == "=>":
			mods[len(mods)-1] = module{f[1], f[2]}
		}
	}
	if goVersion == "" {
		t.Fatalf("go version -m %s says no Go version:\n%s", path, out)
	}
	slices.SortFunc(mods, func(a, b module) int { return strings.Compare(a.Path, b.Path) })
	return goVersion, mods
}

// readBOM decodes a CycloneDX JSON SBOM of the release.
func readBOM(t *testing.T, path string) *cdx.BOM {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion != cdx.SpecVersion1_6 || bom.Components == nil || bom.Dependencies == nil {
		t.Fatalf("%s is not a CycloneDX 1.6 SBOM with components and dependencies", path)
	}
	return &bom
}

// bomModules are the modules the SBOM says the component ref was built with: the
// libraries its dependency names, the Go standard library apart.
func bomModules(t *testing.T, bom *cdx.BOM, ref string) (stdlib string, mods []module) {
	t.Helper()
	byRef := map[string]cdx.Component{}
	for _, c := range *bom.Components {
		byRef[c.BOMRef] = c
	}
	for _, d := range *bom.Dependencies {
		if d.Ref != ref || d.Dependencies == nil {
			continue
		}
		for _, r := range *d.Dependencies {
			c, ok := byRef[r]
			if !ok {
				t.Fatalf("%s depends on %s, which the SBOM does not list", ref, r)
			}
			if c.Type != cdx.ComponentTypeLibrary || c.PackageURL != r || !strings.HasPrefix(r, "pkg:golang/") {
				t.Errorf("module %s: type %s, purl %s; want a library whose bom-ref is its pkg:golang purl", c.Name, c.Type, c.PackageURL)
			}
			if c.Name == "stdlib" {
				stdlib = c.Version
				continue
			}
			mods = append(mods, module{c.Name, c.Version})
		}
	}
	slices.SortFunc(mods, func(a, b module) int { return strings.Compare(a.Path, b.Path) })
	return stdlib, mods
}

// component is the SBOM's component ref, which must be the file with sha256 sum.
func component(t *testing.T, bom *cdx.BOM, ref, sum string) cdx.Component {
	t.Helper()
	c := findComponent(bom, ref)
	if c == nil {
		t.Fatalf("the SBOM lists no component %s", ref)
	}
	checkHash(t, *c, sum)
	return *c
}

// checkHash checks that c's one hash is the SHA-256 sum.
func checkHash(t *testing.T, c cdx.Component, sum string) {
	t.Helper()
	if c.Hashes == nil || len(*c.Hashes) != 1 || (*c.Hashes)[0].Algorithm != cdx.HashAlgoSHA256 || (*c.Hashes)[0].Value != sum {
		t.Errorf("component %s: hashes %v, want SHA-256 %s", c.BOMRef, c.Hashes, sum)
	}
}

// checkBuiltWith checks that the SBOM's component ref lists exactly the modules and Go
// version `go version -m` reads from the binary at path (the completion links the
// standard library only).
func checkBuiltWith(t *testing.T, bom *cdx.BOM, ref, path string) {
	t.Helper()
	goVersion, want := goVersionM(t, path)
	if len(want) == 0 && ref != rel.CompletionName {
		t.Fatalf("go version -m %s lists no module", path)
	}
	stdlib, got := bomModules(t, bom, ref)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: the modules of the SBOM (-go version -m +SBOM):\n%s", ref, diff)
	}
	if stdlib != goVersion {
		t.Errorf("%s: the SBOM's stdlib is %q, the binary was built with %s", ref, stdlib, goVersion)
	}
}

// The plugin archive's SBOM describes the archive (its SHA-256) and lists each binary in
// it with its SHA-256 and exactly the modules and Go version it was built with.
func TestPluginSBOMListsTheModulesTheBinaryWasBuiltWith(t *testing.T) {
	dir := released(t)
	archive := filepath.Join(dir, "kubectl-quotagate_"+runtime.GOOS+"_"+runtime.GOARCH+".tar.gz")
	bom := readBOM(t, archive+rel.SBOMSuffix)
	if m := bom.Metadata; m == nil || m.Component == nil || m.Component.Name != filepath.Base(archive) || m.Component.Version != testVersion {
		t.Fatalf("the SBOM's subject is %+v, want %s %s", bom.Metadata, filepath.Base(archive), testVersion)
	}
	checkHash(t, *bom.Metadata.Component, sha256Of(t, archive))

	bins := extract(t, archive)
	for _, name := range []string{rel.PluginName, rel.CompletionName} {
		c := component(t, bom, name, sha256Of(t, bins[name]))
		if c.Type != cdx.ComponentTypeApplication || c.Version != testVersion {
			t.Errorf("%s: type %s version %s, want an application of %s", name, c.Type, c.Version, testVersion)
		}
		checkBuiltWith(t, bom, name, bins[name])
	}
	component(t, bom, "LICENSE", sha256Of(t, bins["LICENSE"]))
}

// The image's SBOM lists, for each platform, the webhook and the manager as the image
// holds them (the files make image compiled) with the modules each was built with, and
// /etc/passwd and /etc/group; its subject carries the image index's digest.
func TestImageSBOMListsTheModulesOfEachBinary(t *testing.T) {
	dir := released(t)
	archive := filepath.Join(dir, "quotagate-"+testVersion+".oci.tar")
	bom := readBOM(t, archive+rel.SBOMSuffix)
	subject := bom.Metadata.Component
	checkHash(t, *subject, sha256Of(t, archive))
	if subject.Type != cdx.ComponentTypeContainer || !strings.Contains(subject.PackageURL, "@"+strings.ReplaceAll(imageResult.Digest.String(), ":", "%3A")) {
		t.Errorf("the SBOM's subject: %s %s, want a container named by the index digest %s", subject.Type, subject.PackageURL, imageResult.Digest)
	}
	platform := "linux/" + runtime.GOARCH
	for _, c := range imageResult.Compiled {
		for imagePath, file := range c.Files {
			ref := platform + ":" + imagePath
			component(t, bom, ref, sha256Of(t, file))
			checkBuiltWith(t, bom, ref, file)
		}
	}
	for _, f := range []string{"/etc/passwd", "/etc/group"} {
		if c := findComponent(bom, platform+":"+f); c == nil || c.Type != cdx.ComponentTypeFile {
			t.Errorf("the image's SBOM does not list the file %s of %s", f, platform)
		}
	}
}

// The provenance is an in-toto Statement v1 with a SLSA Provenance v1 predicate whose
// subjects are every other file of the release and the image, each with its SHA-256,
// built from the release's commit.
func TestProvenanceNamesEveryArtifact(t *testing.T) {
	dir := released(t)
	raw, err := os.ReadFile(filepath.Join(dir, rel.ProvenanceFile))
	if err != nil {
		t.Fatal(err)
	}
	var st intoto.Statement
	if err := protojson.Unmarshal(raw, &st); err != nil {
		t.Fatalf("the provenance is not an in-toto statement: %v\n%s", err, raw)
	}
	if err := st.Validate(); err != nil {
		t.Errorf("the statement does not validate: %v", err)
	}
	if st.GetType() != intoto.StatementTypeUri || st.GetPredicateType() != "https://slsa.dev/provenance/v1" {
		t.Errorf("statement %s, predicate %s; want in-toto v1 and SLSA provenance v1", st.GetType(), st.GetPredicateType())
	}
	got := map[string]string{}
	for _, s := range st.GetSubject() {
		got[s.GetName()] = s.GetDigest()["sha256"]
	}
	want := map[string]string{rel.ImageRepository + ":" + testVersion: strings.TrimPrefix(imageResult.Digest.String(), "sha256:")}
	for _, a := range artifacts {
		if a.Name != rel.ProvenanceFile {
			want[a.Name] = sha256Of(t, filepath.Join(dir, a.Name))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("provenance subjects (-release +provenance):\n%s", diff)
	}
	var pred struct {
		BuildDefinition struct {
			BuildType            string `json:"buildType"`
			ResolvedDependencies []struct {
				URI    string            `json:"uri"`
				Digest map[string]string `json:"digest"`
			} `json:"resolvedDependencies"`
		} `json:"buildDefinition"`
		RunDetails struct {
			Builder struct {
				ID string `json:"id"`
			} `json:"builder"`
		} `json:"runDetails"`
	}
	b, err := st.GetPredicate().MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pred); err != nil {
		t.Fatal(err)
	}
	deps := pred.BuildDefinition.ResolvedDependencies
	if len(deps) != 1 || deps[0].Digest["gitCommit"] != "0123abcd" || !strings.HasSuffix(deps[0].URI, "@refs/tags/"+testVersion) {
		t.Errorf("resolved dependencies %+v, want the repository at the release's tag and commit", deps)
	}
	if pred.BuildDefinition.BuildType != rel.ProvenanceBuildType || pred.RunDetails.Builder.ID == "" {
		t.Errorf("buildType %q, builder %q", pred.BuildDefinition.BuildType, pred.RunDetails.Builder.ID)
	}
}

func findComponent(bom *cdx.BOM, ref string) *cdx.Component {
	for i, c := range *bom.Components {
		if c.BOMRef == ref {
			return &(*bom.Components)[i]
		}
	}
	return nil
}

// extract unpacks the plugin archive into a directory and returns its files by name.
func extract(t *testing.T, archive string) map[string]string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dir, out := t.TempDir(), map[string]string{}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[hdr.Name] = filepath.Join(dir, hdr.Name)
		if err := os.WriteFile(out[hdr.Name], b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
