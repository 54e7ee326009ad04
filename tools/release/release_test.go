package release_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/quotagate/quotagate/internal/version"
	"github.com/quotagate/quotagate/tools/ociimage"
	rel "github.com/quotagate/quotagate/tools/release"
)

// testVersion is the version the tests release; the plugin is built for the host only.
const testVersion = "v1.2.3-test.1"

var (
	releaseOnce sync.Once
	releaseDir  string
	releaseErr  error
	artifacts   []rel.Artifact
	// imageDir holds what make image wrote (bin/, oci/ and the archive), and
	// imageResult what it built.
	imageDir    string
	imageResult *ociimage.Result
)

// released runs the release once for all tests of the package, into a directory of its
// own, with the image make image builds (for one platform) and a tarball of another
// version in the image directory.
func released(t *testing.T) string {
	t.Helper()
	releaseOnce.Do(func() {
		root, err := filepath.Abs("../..")
		if err != nil {
			releaseErr = err
			return
		}
		dir, err := os.MkdirTemp("", "quotagate-release-test-")
		if err != nil {
			releaseErr = err
			return
		}
		// The image as make image builds it, for linux on this machine's architecture
		// only; and a tarball of another version, which the release must leave out.
		imageDir = filepath.Join(dir, "image")
		if imageResult, releaseErr = ociimage.Build(context.Background(), ociimage.Options{
			Metadata: ociimage.Metadata{Version: testVersion, Revision: "0123abcd", Created: time.Unix(1700000000, 0)},
			Root:     root, LDFlags: version.LDFlags(testVersion, "0123abcd"),
			BinDir: filepath.Join(imageDir, "bin"), LayoutDir: filepath.Join(imageDir, "oci"),
			Archive:   filepath.Join(imageDir, "quotagate-"+testVersion+".oci.tar"),
			Platforms: []v1.Platform{{OS: "linux", Architecture: runtime.GOARCH}},
		}); releaseErr != nil {
			return
		}
		if err := os.WriteFile(filepath.Join(imageDir, "quotagate-v0.9.0.oci.tar"), []byte("another version"), 0o644); err != nil {
			releaseErr = err
			return
		}
		releaseDir = filepath.Join(dir, "release")
		artifacts, releaseErr = rel.Run(context.Background(), rel.Options{
			RepoRoot:  root,
			OutDir:    releaseDir,
			Version:   testVersion,
			Revision:  "0123abcd",
			ModTime:   time.Unix(1700000000, 0),
			Platforms: []rel.Platform{{OS: runtime.GOOS, Arch: runtime.GOARCH}},
			ImageDir:  imageDir,
		})
	})
	if releaseErr != nil {
		t.Fatalf("release %s: %v", testVersion, releaseErr)
	}
	return releaseDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if releaseDir != "" {
		_ = os.RemoveAll(filepath.Dir(releaseDir))
	}
	os.Exit(code)
}

// The release holds exactly the files it says it wrote, with their sizes.
func TestArtifacts(t *testing.T) {
	dir := released(t)
	plugin := "kubectl-quotagate_" + runtime.GOOS + "_" + runtime.GOARCH + ".tar.gz"
	image := "quotagate-" + testVersion + ".oci.tar"
	want := []string{
		"quotagate-1.2.3-test.1.tgz", rel.CRDsFile, rel.InstallFile,
		plugin, plugin + rel.SBOMSuffix,
		rel.KrewFile, image, image + rel.SBOMSuffix, rel.ChecksumsFile, rel.ProvenanceFile,
	}
	var got []string
	for _, a := range artifacts {
		got = append(got, a.Name)
		fi, err := os.Stat(filepath.Join(dir, a.Name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != a.Size || a.Size == 0 {
			t.Errorf("%s: reported %d bytes, file has %d", a.Name, a.Size, fi.Size())
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("artifacts:\n got %v\nwant %v (the image of another version must be left out)", got, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) {
		t.Errorf("%s holds %d files, want %d", dir, len(entries), len(want))
	}
}

// The packaged chart loads with the Helm SDK, carries the release's version and
// appVersion (the working tree's Chart.yaml keeps its own), and renders with the image
// tagged with the release.
func TestChart(t *testing.T) {
	dir := released(t)
	c, err := loader.Load(filepath.Join(dir, "quotagate-1.2.3-test.1.tgz"))
	if err != nil {
		t.Fatalf("loading the packaged chart: %v", err)
	}
	if c.Metadata.Version != "1.2.3-test.1" || c.Metadata.AppVersion != testVersion {
		t.Errorf("packaged chart: version %q appVersion %q, want 1.2.3-test.1 and %s", c.Metadata.Version, c.Metadata.AppVersion, testVersion)
	}
	tree, err := loader.Load("../../charts/quotagate")
	if err != nil {
		t.Fatal(err)
	}
	if tree.Metadata.AppVersion == testVersion {
		t.Errorf("the working tree's Chart.yaml was rewritten to appVersion %s", testVersion)
	}

	objs := render(t, c)
	checkReleaseImages(t, "chart", objs)
}

// render is `helm template quotagate <chart> -n quotagate-system` with default values.
func render(t *testing.T, c *chart.Chart) []*unstructured.Unstructured {
	t.Helper()
	inst := action.NewInstall(action.NewConfiguration())
	inst.DryRunStrategy = action.DryRunClient
	inst.ReleaseName = "quotagate"
	inst.Namespace = "quotagate-system"
	kv, err := common.ParseKubeVersion("v1.37.2")
	if err != nil {
		t.Fatal(err)
	}
	inst.KubeVersion = kv
	r, err := inst.Run(c, map[string]any{})
	if err != nil {
		t.Fatalf("rendering the packaged chart: %v", err)
	}
	rl, ok := r.(*release.Release)
	if !ok {
		t.Fatalf("unexpected release type %T", r)
	}
	return decode(t, rl.Manifest)
}

func decode(t *testing.T, stream string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	for {
		var o map[string]any
		if err := d.Decode(&o); err != nil {
			if err.Error() == "EOF" {
				return objs
			}
			t.Fatalf("decoding: %v", err)
		}
		if len(o) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: o})
		}
	}
}

// checkReleaseImages checks that objs (from what) hold the webhook and manager
// Deployments, each running the release's image.
func checkReleaseImages(t *testing.T, what string, objs []*unstructured.Unstructured) {
	t.Helper()
	images := deploymentImages(t, objs)
	if len(images) != 2 {
		t.Fatalf("%s: want the webhook and manager Deployments, got images %v", what, images)
	}
	for name, img := range images {
		if img != rel.ImageRepository+":"+testVersion {
			t.Errorf("%s Deployment %s: image %s, want %s:%s", what, name, img, rel.ImageRepository, testVersion)
		}
	}
}

// deploymentImages maps each Deployment to the image of its one container.
func deploymentImages(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	images := map[string]string{}
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := kruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatalf("Deployment %s: %v", o.GetName(), err)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			images[d.Name+"/"+c.Name] = c.Image
		}
	}
	return images
}

// install.yaml parses, holds the CRDs and both Deployments, and every container runs
// the release's image.
func TestInstallYAML(t *testing.T) {
	dir := released(t)
	b, err := os.ReadFile(filepath.Join(dir, rel.InstallFile))
	if err != nil {
		t.Fatal(err)
	}
	objs := decode(t, string(b))
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	crds := len(bases(t))
	if kinds["CustomResourceDefinition"] != crds || kinds["Deployment"] != 2 || kinds["MutatingWebhookConfiguration"] != 1 {
		t.Errorf("install.yaml kinds %v: want %d CRDs (config/crd/bases), 2 Deployments and the webhook configuration", kinds, crds)
	}
	checkReleaseImages(t, "install.yaml", objs)
}

// quotagate-crds.yaml holds each CRD of config/crd/bases once.
func TestCRDs(t *testing.T) {
	dir := released(t)
	b, err := os.ReadFile(filepath.Join(dir, rel.CRDsFile))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range decode(t, string(b)) {
		if o.GetKind() != "CustomResourceDefinition" {
			t.Errorf("%s: unexpected %s %s", rel.CRDsFile, o.GetKind(), o.GetName())
		}
		names = append(names, o.GetName())
	}
	slices.Sort(names)
	if got, want := strings.Join(names, ","), strings.Join(bases(t), ","); got != want {
		t.Errorf("%s holds %s, want %s (config/crd/bases)", rel.CRDsFile, got, want)
	}
}

// bases are the names of the CRDs in config/crd/bases, sorted.
func bases(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range decode(t, string(b)) {
			names = append(names, o.GetName())
		}
	}
	slices.Sort(names)
	return names
}

// The krew manifest names each archive at its GitHub release URL with the archive's
// sha256, and checksums.txt (sha256sum format) agrees with every file.
func TestKrewManifestAndChecksums(t *testing.T) {
	dir := released(t)
	sums := map[string]string{}
	f, err := os.Open(filepath.Join(dir, rel.ChecksumsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("checksums.txt line %q is not sha256sum's \"<hex>  <file>\"", sc.Text())
		}
		sums[name] = sum
	}
	for _, a := range artifacts {
		if a.Name == rel.ChecksumsFile || a.Name == rel.ProvenanceFile {
			continue
		}
		if got := sha256Of(t, filepath.Join(dir, a.Name)); sums[a.Name] != got {
			t.Errorf("checksums.txt: %s has %q, the file hashes to %s", a.Name, sums[a.Name], got)
		}
	}

	b, err := os.ReadFile(filepath.Join(dir, rel.KrewFile))
	if err != nil {
		t.Fatal(err)
	}
	var m rel.KrewPlugin
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		t.Fatalf("krew manifest: %v", err)
	}
	if want := "store/quotagate/" + testVersion + "/" + rel.CompletionName; !strings.Contains(m.Spec.Caveats, want) {
		t.Errorf("krew manifest caveats do not say how to put the completion on the PATH (%s):\n%s", want, m.Spec.Caveats)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "quotagate" || m.Spec.Version != testVersion {
		t.Errorf("krew manifest header: %s %s %s version %s", m.APIVersion, m.Kind, m.Metadata.Name, m.Spec.Version)
	}
	if len(m.Spec.Platforms) != 1 {
		t.Fatalf("krew manifest: %d platforms, want the one built", len(m.Spec.Platforms))
	}
	p := m.Spec.Platforms[0]
	archive := "kubectl-quotagate_" + runtime.GOOS + "_" + runtime.GOARCH + ".tar.gz"
	wantURI := "https://github.com/quotagate/quotagate/releases/download/" + testVersion + "/" + archive
	if p.URI != wantURI || p.Bin != "kubectl-quotagate" {
		t.Errorf("krew platform: uri %s bin %s, want %s and kubectl-quotagate", p.URI, p.Bin, wantURI)
	}
	if p.Selector.MatchLabels["os"] != runtime.GOOS || p.Selector.MatchLabels["arch"] != runtime.GOARCH {
		t.Errorf("krew platform selector %v, want os %s arch %s", p.Selector.MatchLabels, runtime.GOOS, runtime.GOARCH)
	}
	if got := sha256Of(t, filepath.Join(dir, archive)); p.SHA256 != got || sums[archive] != got {
		t.Errorf("%s hashes to %s; krew manifest says %s, checksums.txt %s", archive, got, p.SHA256, sums[archive])
	}
}
