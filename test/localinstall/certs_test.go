package localinstall

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func certificate(name, secret string, spec map[string]any) *unstructured.Unstructured {
	spec["secretName"] = secret
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": name, "namespace": "quotagate-system"},
		"spec":     spec,
	}}
}

// The chart's chain, as issued here: a self-signed CA, then serving certificates signed
// by it. A renewal gives a new key and certificate that verify against the very same
// ca.crt, which is what the webhook's caBundle holds.
func TestIssuedChainSurvivesRenewal(t *testing.T) {
	caReq, _, err := certificateRequest(certificate("quotagate-ca", "quotagate-ca", map[string]any{
		"isCA": true, "commonName": "quotagate-ca.quotagate-system", "duration": "87600h",
	}))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caData, err := selfSign(caReq, now)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(caData[corev1.TLSCertKey], caData["ca.crt"]) {
		t.Error("a self-signed CA's Secret: ca.crt differs from tls.crt")
	}
	caSecret := &corev1.Secret{Data: caData}

	req, cert, err := certificateRequest(certificate("quotagate-webhook-cert", "quotagate-webhook-tls", map[string]any{
		"commonName": "quotagate-webhook.quotagate-system.svc",
		"dnsNames":   []any{"quotagate-webhook.quotagate-system.svc", "quotagate-webhook.quotagate-system.svc.cluster.local"},
		"duration":   "2160h",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cert.Spec.SecretName != "quotagate-webhook-tls" {
		t.Errorf("secret = %q, want quotagate-webhook-tls", cert.Spec.SecretName)
	}
	first, err := signWithCA(req, caSecret, now)
	if err != nil {
		t.Fatal(err)
	}
	renewed, err := signWithCA(req, caSecret, now)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(first[corev1.TLSPrivateKeyKey], renewed[corev1.TLSPrivateKeyKey]) {
		t.Error("the renewed certificate kept its key, want a new one (rotationPolicy Always)")
	}
	if !bytes.Equal(first["ca.crt"], caData[corev1.TLSCertKey]) || !bytes.Equal(renewed["ca.crt"], first["ca.crt"]) {
		t.Error("ca.crt of the serving certificate is not the CA, or changed at renewal")
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caData["ca.crt"]) {
		t.Fatal("ca.crt does not parse")
	}
	for name, data := range map[string]map[string][]byte{"first": first, "renewed": renewed} {
		pair, err := tls.X509KeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey])
		if err != nil {
			t.Fatalf("%s: certificate and key do not match: %v", name, err)
		}
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, dns := range []string{"127.0.0.1", "quotagate-webhook.quotagate-system.svc", "quotagate-webhook.quotagate-system.svc.cluster.local"} {
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: dns, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				t.Errorf("%s: not valid for %s against the CA: %v", name, dns, err)
			}
		}
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: roots}); err == nil {
			t.Errorf("%s: valid for a name the Certificate does not ask for", name)
		}
		if leaf.IsCA {
			t.Errorf("%s: the serving certificate is a CA", name)
		}
		if !leaf.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
			t.Errorf("%s: IP SANs %v, want 127.0.0.1", name, leaf.IPAddresses)
		}
	}
	block, _ := pem.Decode(first[corev1.TLSCertKey])
	leaf, _ := x509.ParseCertificate(block.Bytes)
	if got, want := leaf.NotAfter.Sub(now).Round(time.Hour), 2160*time.Hour; got != want {
		t.Errorf("lifetime %v, want the Certificate's duration %v", got, want)
	}

	// The chart's self-signed Issuer signs only the CA; a CA Issuer signs no CA.
	if _, err := selfSign(req, now); err == nil {
		t.Error("selfSign issued a self-signed serving certificate, want an error")
	}
	if _, err := signWithCA(caReq, caSecret, now); err == nil {
		t.Error("signWithCA issued an intermediate CA, want an error")
	}
	if _, err := signWithCA(req, &corev1.Secret{Data: map[string][]byte{corev1.TLSCertKey: caData[corev1.TLSCertKey], corev1.TLSPrivateKeyKey: first[corev1.TLSPrivateKeyKey]}}, now); err == nil {
		t.Error("signWithCA signed with a key that is not the CA's, want an error")
	}
}

// The cert dir is updated as the kubelet updates a Secret volume: a reader always finds
// a certificate and its own key, and the previous version is gone.
func TestWriteAtomicallySwapsVersions(t *testing.T) {
	dir := t.TempDir()
	for _, version := range []string{"v1", "v2"} {
		if err := writeAtomically(dir, map[string][]byte{"tls.crt": []byte("crt " + version), "tls.key": []byte("key " + version)}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"tls.crt", "tls.key"} {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if want := name[4:] + " " + version; string(got) != want {
				t.Errorf("%s = %q, want %q", name, got, want)
			}
		}
		versions, err := filepath.Glob(filepath.Join(dir, "..20*"))
		if err != nil {
			t.Fatal(err)
		}
		if len(versions) != 1 {
			t.Errorf("after writing %s: versions %v, want only the current one", version, versions)
		}
	}
}
