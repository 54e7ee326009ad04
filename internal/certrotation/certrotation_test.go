package certrotation

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func config() Config {
	return Config{
		Namespace: "qg", SecretName: "qg-webhook-internal-tls", WebhookConfiguration: "qg-webhook",
		Service: "qg-webhook", CertDir: "/certs",
	}
}

// The rotator's informers must ask for their one object by name, or the API server
// refuses them under RBAC that names it; every other request passes untouched.
func TestScopedTransport(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	}))
	defer srv.Close()
	c := config()
	c.APIServices = []string{"v1alpha1.visibility.quotagate.io"}
	scope, err := newScope(c)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &scopedTransport{next: http.DefaultTransport, scope: scope}}
	for _, req := range []struct{ method, path string }{
		{"GET", "/api/v1/namespaces/qg/secrets?limit=500"},
		{"GET", "/api/v1/namespaces/qg/secrets?watch=true&fieldSelector=type%3DOpaque"},
		{"GET", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?watch=true"},
		{"GET", "/apis/apiregistration.k8s.io/v1/apiservices"},
		{"PUT", "/api/v1/namespaces/qg/secrets"},
		{"GET", "/api/v1/namespaces/other/secrets"},
		{"GET", "/api/v1/namespaces/qg/secrets/qg-webhook-internal-tls"},
	} {
		r, _ := http.NewRequest(req.method, srv.URL+req.path, strings.NewReader(""))
		resp, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	want := []string{
		"GET /api/v1/namespaces/qg/secrets?fieldSelector=metadata.name%3Dqg-webhook-internal-tls&limit=500",
		"GET /api/v1/namespaces/qg/secrets?fieldSelector=type%3DOpaque%2Cmetadata.name%3Dqg-webhook-internal-tls&watch=true",
		"GET /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?fieldSelector=metadata.name%3Dqg-webhook&watch=true",
		"GET /apis/apiregistration.k8s.io/v1/apiservices?fieldSelector=metadata.name%3Dv1alpha1.visibility.quotagate.io",
		"PUT /api/v1/namespaces/qg/secrets?",
		"GET /api/v1/namespaces/other/secrets?",
		"GET /api/v1/namespaces/qg/secrets/qg-webhook-internal-tls?",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests the API server got (-want +got):\n%s", diff)
	}
}

func TestConfig(t *testing.T) {
	c := config()
	c.ExtraDNSNames = []string{"localhost"}
	if diff := cmp.Diff([]string{"qg-webhook.qg.svc", "qg-webhook.qg.svc.cluster.local", "localhost"}, c.DNSNames()); diff != "" {
		t.Errorf("DNSNames (-want +got):\n%s", diff)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
	bad := Config{ServerCertValidity: time.Hour, RenewBefore: 2 * time.Hour}
	err := bad.Validate()
	for _, want := range []string{"namespace", "secret", "nothing uses", "DNS name", "cert dir", "renew-before"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to name %s", err, want)
		}
	}
	apiOnly := Config{Namespace: "qg", SecretName: "s", CertDir: "/d", APIServices: []string{"v1alpha1.visibility.quotagate.io"}, ExtraDNSNames: []string{"qg-visibility.qg.svc"}}
	if err := apiOnly.Validate(); err != nil {
		t.Errorf("Validate() of a certificate for an APIService alone (policy admission) = %v", err)
	}
	if diff := cmp.Diff([]string{"qg-visibility.qg.svc"}, apiOnly.DNSNames()); diff != "" {
		t.Errorf("DNSNames of the APIService-only certificate (-want +got):\n%s", diff)
	}
	scope, err := newScope(apiOnly)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := scope["/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"]; ok {
		t.Error("the scope names a webhook configuration the APIService-only rotator has none of")
	}
	if err := (Config{Namespace: "qg", SecretName: "s", CertDir: "/d"}).Validate(); err == nil || !strings.Contains(err.Error(), "nothing uses the certificate") {
		t.Errorf("Validate() of a certificate nothing uses = %v", err)
	}
	half := config()
	half.Service = ""
	if err := half.Validate(); err == nil || !strings.Contains(err.Error(), "set both or neither") {
		t.Errorf("Validate() of a webhook configuration without its Service = %v", err)
	}
	two := config()
	two.APIServices = []string{"a", "b"}
	if _, err := newScope(two); err == nil {
		t.Error("newScope accepted two APIServices, which one field selector cannot name")
	}
}
