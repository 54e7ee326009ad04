package localinstall

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestIssuedCertificateServesWhatTheCertificateAsksFor(t *testing.T) {
	cert := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": "quotagate-webhook-cert", "namespace": "quotagate-system"},
		"spec": map[string]any{
			"secretName": "quotagate-webhook-tls",
			"commonName": "quotagate-webhook.quotagate-system.svc",
			"dnsNames":   []any{"quotagate-webhook.quotagate-system.svc", "quotagate-webhook.quotagate-system.svc.cluster.local"},
			"duration":   "2160h",
		},
	}}
	req, secret, err := certificateRequest(cert)
	if err != nil {
		t.Fatal(err)
	}
	if secret != "quotagate-webhook-tls" {
		t.Errorf("secret = %q, want quotagate-webhook-tls", secret)
	}
	now := time.Now()
	sc, err := issueServingCert(req, now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(sc.certPEM, sc.keyPEM)
	if err != nil {
		t.Fatalf("certificate and key do not match: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	block, _ := pem.Decode(sc.caPEM)
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots.AddCert(ca)
	for _, name := range []string{"127.0.0.1", "quotagate-webhook.quotagate-system.svc", "quotagate-webhook.quotagate-system.svc.cluster.local"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("not valid for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: roots}); err == nil {
		t.Error("valid for a name the Certificate does not ask for")
	}
	if got, want := leaf.NotAfter.Sub(now).Round(time.Hour), 2160*time.Hour; got != want {
		t.Errorf("lifetime %v, want the Certificate's duration %v", got, want)
	}
	if !leaf.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("IP SANs %v, want 127.0.0.1", leaf.IPAddresses)
	}
}
