//go:build e2e

package e2e

import (
	"bytes"
	"crypto/x509"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/quotagate/quotagate/test/localinstall"
)

// The webhook's certificates across an upgrade (TestUpgradeFromPreviousRelease): what
// the API server trusts and what the webhook serves, before and after.

// webhookCerts is what the webhook is trusted by and serves: the caBundle, the data of
// every TLS Secret of the release namespace, and the certificate the webhook presents.
func webhookCerts(t *testing.T, e env, inst *localinstall.Installation) map[string][]byte {
	t.Helper()
	ctx := t.Context()
	mwc, err := e.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, inst.WebhookConfiguration(), metav1.GetOptions{})
	fatalIf(t, err, "reading the webhook configuration")
	out := map[string][]byte{}
	for _, w := range mwc.Webhooks {
		out["caBundle of "+w.Name] = w.ClientConfig.CABundle
	}
	secrets, err := e.cs.CoreV1().Secrets(inst.Namespace()).List(ctx, metav1.ListOptions{})
	fatalIf(t, err, "listing Secrets")
	for _, s := range secrets.Items {
		if s.Type != corev1.SecretTypeTLS {
			continue
		}
		for k, v := range s.Data {
			out["Secret "+s.Name+" "+k] = v
		}
	}
	served, err := servedCert(ctx, inst.WebhookAddress(), mwc.Webhooks[0].ClientConfig.CABundle)
	fatalIf(t, err, "connecting to the webhook with the caBundle")
	out["served certificate"] = served.Raw
	if len(out) < 4 {
		t.Fatalf("The webhook's certificates: found only %v", keys(out))
	}
	return out
}

// checkCertsKept checks what cert-manager keeps across `helm upgrade`: the CA (its
// Secret, every ca.crt, the caBundle) always; the serving certificate unless its
// Certificate asks for names the old one lacks (0.3.0 adds the visibility API's
// Service), in which case the new one covers them and is signed by the same CA.
func checkCertsKept(t *testing.T, e env, inst *localinstall.Installation, before, after map[string][]byte) {
	t.Helper()
	secret := inst.WebhookCertSecret()
	serving := []string{"Secret " + secret + " tls.crt", "Secret " + secret + " tls.key", "served certificate"}
	trust := func(m map[string][]byte) map[string][]byte {
		out := maps.Clone(m)
		for _, k := range serving {
			delete(out, k)
		}
		return out
	}
	if diff := cmp.Diff(trust(before), trust(after)); diff != "" {
		t.Errorf("The upgrade changed the CA the API server trusts (-before +after):\n%s", diff)
	}
	want := servingCertNames(t, e, inst)
	was, err := x509.ParseCertificate(before["served certificate"])
	fatalIf(t, err, "parsing the certificate served before the upgrade")
	now, err := x509.ParseCertificate(after["served certificate"])
	fatalIf(t, err, "parsing the certificate served after the upgrade")
	if missing := missingNames(now, want); len(missing) > 0 {
		t.Errorf("After the upgrade the webhook serves a certificate without %v (its Certificate asks for %v)", missing, want)
	}
	if len(missingNames(was, want)) == 0 {
		for _, k := range serving {
			if !bytes.Equal(before[k], after[k]) {
				t.Errorf("The upgrade issued the serving certificate again (%s changed) although its names did not change", k)
			}
		}
	} else {
		t.Logf("The serving certificate was issued again from the same CA for the names the new chart adds: %v", missingNames(was, want))
	}
}

// servingCertNames are the DNS names the release's serving Certificate asks for.
func servingCertNames(t *testing.T, e env, inst *localinstall.Installation) []string {
	t.Helper()
	dc, err := dynamic.NewForConfig(e.admin)
	fatalIf(t, err, "building a dynamic client")
	gvr := schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}
	list, err := dc.Resource(gvr).Namespace(inst.Namespace()).List(t.Context(), metav1.ListOptions{})
	fatalIf(t, err, "listing Certificates")
	for _, c := range list.Items {
		if name, _, _ := unstructured.NestedString(c.Object, "spec", "secretName"); name == inst.WebhookCertSecret() {
			names, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "dnsNames")
			return names
		}
	}
	t.Fatalf("no Certificate writes Secret %s", inst.WebhookCertSecret())
	return nil
}

// missingNames are the names of want the certificate is not valid for.
func missingNames(cert *x509.Certificate, want []string) []string {
	var out []string
	for _, n := range want {
		if cert.VerifyHostname(n) != nil {
			out = append(out, n)
		}
	}
	return out
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
