package charts_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/quotagate/quotagate/tools/chartrender"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// kubeVersion is the version of the local control plane the chart is installed into.
const kubeVersion = "v1.37.2"

// repoRoot is the repository's root directory: go test runs a package's tests in its
// directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func chartDir(t testing.TB) string { return filepath.Join(repoRoot(t), "charts", "quotagate") }

// manifests are the objects of one rendering, in the order Helm would apply them, and the
// hooks apart.
type manifests struct {
	Objects []*unstructured.Unstructured
	Hooks   []*unstructured.Unstructured
	Notes   string
}

// find returns the one object of kind (and name, unless empty) or fails the test.
func (m manifests) find(t testing.TB, kind, name string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range append(append([]*unstructured.Unstructured{}, m.Objects...), m.Hooks...) {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s %q, found %d among %s", kind, name, len(found), m.names())
	}
	return found[0]
}

// all returns the objects and hooks of kind.
func (m manifests) all(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range append(append([]*unstructured.Unstructured{}, m.Objects...), m.Hooks...) {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func (m manifests) names() string {
	var s []string
	for _, o := range append(append([]*unstructured.Unstructured{}, m.Objects...), m.Hooks...) {
		s = append(s, o.GetKind()+"/"+o.GetName())
	}
	return strings.Join(s, ", ")
}

// install renders the chart like `helm install --dry-run=client`: values are checked
// against values.schema.json and the chart's kubeVersion against kubeVersion.
func install(release, namespace string, values map[string]any) (manifests, error) {
	return installWith(release, namespace, kubeVersion, values)
}

// installOn renders the default release on a cluster of version kv.
func installOn(kv string, values map[string]any) (manifests, error) {
	return installWith("quotagate", "quotagate-system", kv, values)
}

func loadChart(t testing.TB) *chart.Chart {
	t.Helper()
	chrt, err := loader.Load(chartDir(t))
	if err != nil {
		t.Fatalf("loading chart: %v", err)
	}
	return chrt
}

// installWith renders the chart on a cluster of the given version.
func installWith(release, namespace, version string, values map[string]any) (manifests, error) {
	return render(release, namespace, chartrender.Cluster{KubeVersion: version}, values)
}

// render renders the chart on cluster. The cluster serves cert-manager.io/v1 too exactly
// when the values choose cert-manager, as a user installs cert-manager before choosing
// it; TestCertManagerChoiceNeedsItsCRDs renders without it.
func render(release, namespace string, cluster chartrender.Cluster, values map[string]any) (manifests, error) {
	if certManagerChosen(values) {
		cluster.APIVersions = append(slices.Clip(cluster.APIVersions), "cert-manager.io/v1")
	}
	r, err := chartrender.Render(chartDirPath(), release, namespace, cluster, values)
	if err != nil {
		return manifests{}, err
	}
	return manifests{Objects: r.Objects, Hooks: r.Hooks, Notes: r.Notes}, nil
}

// certManagerChosen reports whether values set certManager.enabled=true.
func certManagerChosen(values map[string]any) bool {
	cm, _ := values["certManager"].(map[string]any)
	enabled, _ := cm["enabled"].(bool)
	return enabled
}

// chartDirPath is chartDir for code that has no testing.TB at hand.
func chartDirPath() string {
	dir, err := filepath.Abs("quotagate")
	if err != nil {
		panic(err)
	}
	return dir
}

// mustInstall is install for renderings that must succeed.
func mustInstall(t testing.TB, release, namespace string, values map[string]any) manifests {
	t.Helper()
	m, err := install(release, namespace, values)
	if err != nil {
		t.Fatalf("rendering release %s in %s: %v", release, namespace, err)
	}
	return m
}

// strictScheme knows the built-in kinds the chart renders, so that a misspelt or misplaced
// field fails decoding instead of being dropped by the API server. (cert-manager's and the
// Prometheus Operator's kinds are checked field by field: their Go types pull in modules
// quotagate does not otherwise need.)
var strictScheme = func() *kruntime.Scheme {
	s := kruntime.NewScheme()
	for _, add := range []func(*kruntime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, apiregistrationv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// decodeStrict decodes obj into its Go type, failing on unknown or duplicate fields.
func decodeStrict(obj *unstructured.Unstructured) (kruntime.Object, error) {
	raw, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	codecs := serializer.NewCodecFactory(strictScheme, serializer.EnableStrict)
	typed, _, err := codecs.UniversalDeserializer().Decode(raw, nil, nil)
	return typed, err
}

// into converts obj into the typed value out points at (strictly).
func into(t testing.TB, obj *unstructured.Unstructured, out any) {
	t.Helper()
	if err := kruntime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, out, true); err != nil {
		t.Fatalf("converting %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// readAbs reads a file or fails the test.
func readAbs(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// kruntimeFromUnstructured converts u into the typed value out points at.
func kruntimeFromUnstructured(u *unstructured.Unstructured, out any) error {
	return kruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)
}
