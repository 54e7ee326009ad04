package charts_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Installing as another release in another namespace renames everything consistently, so
// that two releases never share a cluster-scoped object (but the CRDs and the visibility
// APIService), and nothing points
// at the default names.
func TestReleaseNameAndNamespace(t *testing.T) {
	const release, namespace, prefix = "acme", "batch-system", "acme-quotagate"
	for name, values := range map[string]map[string]any{"self-managed certificates": nil, "cert-manager": withCertManager} {
		t.Run(name, func(t *testing.T) { checkReleaseNames(t, release, namespace, prefix, values) })
	}
}

func checkReleaseNames(t *testing.T, release, namespace, prefix string, values map[string]any) {
	m := mustInstall(t, release, namespace, values)
	def := mustInstall(t, defaultRelease, defaultNamespace, values)

	defaultNames := map[string]bool{}
	for _, o := range append(def.Objects, def.Hooks...) {
		defaultNames[o.GetKind()+"/"+o.GetName()] = true
	}
	for _, o := range append(append([]*unstructured.Unstructured{}, m.Objects...), m.Hooks...) {
		// A CRD's name is its plural.group and an APIService's its version.group: one of
		// each per cluster, so only one release may serve the visibility API
		// (docs/visibility.md).
		if o.GetKind() == "CustomResourceDefinition" || o.GetKind() == "APIService" {
			continue
		}
		if !strings.HasPrefix(o.GetName(), prefix+"-") {
			t.Errorf("%s %s: name does not start with %s-", o.GetKind(), o.GetName(), prefix)
		}
		if o.GetNamespace() == "" && defaultNames[o.GetKind()+"/"+o.GetName()] {
			t.Errorf("cluster-scoped %s %s has the same name in both releases", o.GetKind(), o.GetName())
		}
		raw, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		for _, stale := range []string{"quotagate-system", `"quotagate-webhook`, `"quotagate-manager`, ":quotagate-manager"} {
			if strings.Contains(string(raw), stale) {
				t.Errorf("%s %s still refers to %s", o.GetKind(), o.GetName(), stale)
			}
		}
	}

	// The references between objects follow the new names.
	mwc := m.find(t, "MutatingWebhookConfiguration", prefix+"-webhook")
	secret := prefix + "-webhook-internal-tls"
	if values != nil {
		if got, want := mwc.GetAnnotations()["cert-manager.io/inject-ca-from"], namespace+"/"+prefix+"-ca"; got != want {
			t.Errorf("inject-ca-from = %q, want %q", got, want)
		}
		m.find(t, "Certificate", prefix+"-webhook-cert")
		m.find(t, "Certificate", prefix+"-ca")
		secret = prefix + "-webhook-tls"
	} else {
		m.find(t, "Secret", secret)
		m.find(t, "ClusterRole", prefix+"-manager-cert-rotator")
		m.find(t, "Role", prefix+"-manager-cert-rotator")
	}
	webhooks, _, _ := unstructured.NestedSlice(mwc.Object, "webhooks")
	svc, _, _ := unstructured.NestedMap(webhooks[0].(map[string]any), "clientConfig", "service")
	if svc["name"] != prefix+"-webhook" || svc["namespace"] != namespace {
		t.Errorf("webhook Service reference = %v, want %s/%s-webhook", svc, namespace, prefix)
	}
	m.find(t, "Service", prefix+"-webhook")
	exprs, _, _ := unstructured.NestedSlice(webhooks[0].(map[string]any), "namespaceSelector", "matchExpressions")
	if notIn := exprs[1].(map[string]any)["values"]; !cmp.Equal(notIn, []any{"kube-system", namespace}) {
		t.Errorf("namespaces excluded = %v, want kube-system and %s", notIn, namespace)
	}
	if args := podSpecOf(t, m, "Deployment", prefix+"-manager").Containers[0].Args; args[1] != "--leader-election-namespace="+namespace {
		t.Errorf("manager args = %v, want the Lease in %s", args, namespace)
	}
	if got := podSpecOf(t, m, "Deployment", prefix+"-webhook").Volumes[0].Secret.SecretName; got != secret {
		t.Errorf("webhook mounts Secret %s, want %s", got, secret)
	}
}

func TestFullnameOverride(t *testing.T) {
	m := mustInstall(t, "whatever", "qg", map[string]any{"fullnameOverride": "qg"})
	m.find(t, "Deployment", "qg-manager")
	m.find(t, "Deployment", "qg-webhook")
	m.find(t, "MutatingWebhookConfiguration", "qg-webhook")
	m.find(t, "ValidatingAdmissionPolicy", "qg-gate-guard")
}

// The chart installs the CRDs controller-gen writes to config/crd/bases (chartsync keeps the
// templates in step), labelled for the release and kept on uninstall.
func TestCRDsMatchConfig(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, nil)
	want := kustomizeBuild(t, "config/crd")
	if len(want.Objects) == 0 {
		t.Fatal("config/crd has no CRDs")
	}
	for _, w := range want.Objects {
		var wantCRD, gotCRD apiextensionsv1.CustomResourceDefinition
		into(t, w, &wantCRD)
		into(t, m.find(t, "CustomResourceDefinition", w.GetName()), &gotCRD)
		if gotCRD.Annotations["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s: want helm.sh/resource-policy: keep, so an uninstall leaves the Budgets", gotCRD.Name)
		}
		if gotCRD.Labels["app.kubernetes.io/instance"] != defaultRelease {
			t.Errorf("CRD %s lacks the release's labels: %v", gotCRD.Name, gotCRD.Labels)
		}
		if diff := cmp.Diff(wantCRD.Spec, gotCRD.Spec); diff != "" {
			t.Errorf("CRD %s differs from config/crd (-config +chart):\n%s", gotCRD.Name, diff)
		}
	}
	if got := len(m.all("CustomResourceDefinition")); got != len(want.Objects) {
		t.Errorf("chart has %d CRDs, config/crd %d", got, len(want.Objects))
	}

	off := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{"crds": map[string]any{"install": false, "keep": false}})
	if n := len(off.all("CustomResourceDefinition")); n != 0 {
		t.Errorf("crds.install=false still renders %d CRDs", n)
	}
	notKept := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{"crds": map[string]any{"keep": false}})
	for _, crd := range notKept.all("CustomResourceDefinition") {
		if _, ok := crd.GetAnnotations()["helm.sh/resource-policy"]; ok {
			t.Errorf("crds.keep=false: CRD %s is still kept on uninstall", crd.GetName())
		}
	}
}
