package charts_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/quotagate/quotagate/tools/chartrender"
)

// str reads a string field of a rendered object.
func str(o *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(o.Object, fields...)
	return s
}

// issuerOf is the Issuer a Certificate's issuerRef names, among the rendered ones.
func issuerOf(t *testing.T, m manifests, cert *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	if kind := str(cert, "spec", "issuerRef", "kind"); kind != "Issuer" {
		t.Fatalf("Certificate %s is issued by a %s, want the chart's own Issuer", cert.GetName(), kind)
	}
	return m.find(t, "Issuer", str(cert, "spec", "issuerRef", "name"))
}

// With certManager.enabled=true the chart's own TLS is a chain: self-signed Issuer -> CA Certificate -> CA Issuer ->
// serving Certificate. cert-manager's CA injector reads the CA (not the serving
// certificate) into the caBundle, so a renewed serving certificate, with its new key, is
// trusted at once.
func TestWebhookCertificateChain(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, withCertManager)
	mwc := m.find(t, "MutatingWebhookConfiguration", "")
	ns, caName, _ := strings.Cut(mwc.GetAnnotations()["cert-manager.io/inject-ca-from"], "/")
	if ns != defaultNamespace {
		t.Errorf("inject-ca-from names namespace %q, want the release namespace %q", ns, defaultNamespace)
	}
	ca := m.find(t, "Certificate", caName)
	if isCA, _, _ := unstructured.NestedBool(ca.Object, "spec", "isCA"); !isCA {
		t.Fatalf("inject-ca-from names Certificate %s, which is not a CA: the caBundle would change at each renewal", caName)
	}
	if got := str(ca, "spec", "duration"); got != "87600h" {
		t.Errorf("CA duration = %s, want 87600h (long-lived)", got)
	}
	if got := str(ca, "spec", "privateKey", "rotationPolicy"); got != "Never" {
		t.Errorf("CA rotationPolicy = %q, want Never (a renewed CA keeps trusting what it signed)", got)
	}
	root := issuerOf(t, m, ca)
	if _, ok, _ := unstructured.NestedMap(root.Object, "spec", "selfSigned"); !ok {
		t.Errorf("the CA's Issuer %s is not self-signed: %v", root.GetName(), root.Object["spec"])
	}

	serving := m.find(t, "Certificate", "quotagate-webhook-cert")
	caIssuer := issuerOf(t, m, serving)
	if got, want := str(caIssuer, "spec", "ca", "secretName"), str(ca, "spec", "secretName"); got != want || got == "" {
		t.Errorf("the serving certificate's Issuer %s signs with Secret %q, want the CA's %q", caIssuer.GetName(), got, want)
	}
	if got := str(serving, "spec", "privateKey", "rotationPolicy"); got != "Always" {
		t.Errorf("serving certificate rotationPolicy = %q, want Always", got)
	}
	for field, want := range map[string]string{"duration": "2160h", "renewBefore": "360h"} {
		if got := str(serving, "spec", field); got != want {
			t.Errorf("serving certificate %s = %s, want %s", field, got, want)
		}
	}
	dnsNames, _, _ := unstructured.NestedStringSlice(serving.Object, "spec", "dnsNames")
	wantDNS := []string{"quotagate-webhook.quotagate-system.svc", "quotagate-webhook.quotagate-system.svc.cluster.local",
		"quotagate-visibility.quotagate-system.svc", "quotagate-visibility.quotagate-system.svc.cluster.local"}
	if diff := cmp.Diff(wantDNS, dnsNames); diff != "" {
		t.Errorf("serving certificate dnsNames (-want +got):\n%s", diff)
	}
	// The visibility API's APIService trusts the same CA as the webhook.
	apiService := m.find(t, "APIService", "v1alpha1.visibility.quotagate.io")
	if got, want := apiService.GetAnnotations()["cert-manager.io/inject-ca-from"], mwc.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != want {
		t.Errorf("the APIService's inject-ca-from = %q, want the webhook's %q", got, want)
	}
	webhookMountsSecret(t, m, str(serving, "spec", "secretName"))

	custom := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{"certManager": map[string]any{"enabled": true, "caDuration": "43800h"}})
	if got := str(custom.find(t, "Certificate", caName), "spec", "duration"); got != "43800h" {
		t.Errorf("certManager.caDuration=43800h: CA duration = %s", got)
	}
}

// certManager.issuerRef replaces the chain: the serving certificate comes from the user's
// issuer, the chart renders no Issuer and no CA, and the caBundle is the ca.crt the
// user's issuer writes into the serving certificate's Secret.
func TestWebhookCertificateFromUsersIssuer(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{
		"certManager": map[string]any{"enabled": true, "issuerRef": map[string]any{"name": "corp-ca", "kind": "ClusterIssuer"}},
	})
	if issuers := m.all("Issuer"); len(issuers) != 0 {
		t.Errorf("the chart renders %d Issuers with certManager.issuerRef set, want none", len(issuers))
	}
	certs := m.all("Certificate")
	if len(certs) != 1 {
		t.Fatalf("want only the serving Certificate, got %d Certificates", len(certs))
	}
	serving := certs[0]
	issuer, _, _ := unstructured.NestedMap(serving.Object, "spec", "issuerRef")
	if diff := cmp.Diff(map[string]any{"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}, issuer); diff != "" {
		t.Errorf("serving certificate issuerRef (-want +got):\n%s", diff)
	}
	want := defaultNamespace + "/" + serving.GetName()
	if got := m.find(t, "MutatingWebhookConfiguration", "").GetAnnotations()["cert-manager.io/inject-ca-from"]; got != want {
		t.Errorf("inject-ca-from = %q, want %q", got, want)
	}
	webhookMountsSecret(t, m, str(serving, "spec", "secretName"))
}

// webhookMountsSecret checks that the webhook mounts the serving certificate's Secret,
// read-only, at its cert dir (where it watches the files for renewals).
func webhookMountsSecret(t *testing.T, m manifests, secret string, items ...corev1.KeyToPath) {
	t.Helper()
	var dep appsv1.Deployment
	into(t, m.find(t, "Deployment", "quotagate-webhook"), &dep)
	pod := dep.Spec.Template.Spec
	if diff := cmp.Diff([]corev1.Volume{{Name: "serving-cert", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: secret, Items: items}}}}, pod.Volumes); diff != "" {
		t.Errorf("webhook volumes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.VolumeMount{{Name: "serving-cert", ReadOnly: true,
		MountPath: "/tmp/k8s-webhook-server/serving-certs"}}, pod.Containers[0].VolumeMounts); diff != "" {
		t.Errorf("webhook volume mounts (-want +got):\n%s", diff)
	}
}

// Choosing cert-manager where the cluster does not serve its API fails the install with a
// sentence that says what to do, rather than Helm's "no matches for kind Certificate"
// halfway through. Where nothing needs a certificate (mode policy without the visibility
// API) there is nothing to refuse.
func TestCertManagerChoiceNeedsItsCRDs(t *testing.T) {
	const want = "certManager.enabled=true, but this cluster does not serve cert-manager.io/v1: install cert-manager first"
	without := chartrender.Cluster{KubeVersion: kubeVersion}
	_, err := chartrender.Render(chartDirPath(), defaultRelease, defaultNamespace, without, withCertManager)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("certManager.enabled=true without cert-manager: %v, want %q", err, want)
	}
	if _, err := chartrender.Render(chartDirPath(), defaultRelease, defaultNamespace, without, nil); err != nil {
		t.Errorf("the default without cert-manager: %v", err)
	}
	noCert := map[string]any{"certManager": map[string]any{"enabled": true},
		"admission": map[string]any{"mode": "policy"}, "visibility": map[string]any{"enabled": false}}
	if _, err := chartrender.Render(chartDirPath(), defaultRelease, defaultNamespace, without, noCert); err != nil {
		t.Errorf("certManager.enabled=true with no certificate to issue: %v", err)
	}
	with := chartrender.Cluster{KubeVersion: kubeVersion, APIVersions: []string{"cert-manager.io/v1"}}
	if _, err := chartrender.Render(chartDirPath(), defaultRelease, defaultNamespace, with, withCertManager); err != nil {
		t.Errorf("certManager.enabled=true with cert-manager: %v", err)
	}
}
