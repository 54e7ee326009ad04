package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestIssuedCertificatesVerifyAgainstTheCA(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	notBefore, notAfter := now.Add(-time.Minute), now.Add(90*24*time.Hour)
	ca, err := NewCA("test-ca", notBefore, notAfter.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca.CertPEM) {
		t.Fatalf("CA certificate is not PEM: %q", ca.CertPEM)
	}
	serving := Spec{
		CommonName: "apiserver", DNSNames: []string{"kubernetes.default.svc"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
		Server: true, NotBefore: notBefore, NotAfter: notAfter,
	}

	tests := map[string]struct {
		spec     Spec
		usage    x509.ExtKeyUsage
		dnsName  string
		wantCN   string
		wantOrgs []string
	}{
		"serving certificate for a service name": {
			spec:    serving,
			usage:   x509.ExtKeyUsageServerAuth,
			dnsName: "kubernetes.default.svc",
			wantCN:  "apiserver",
		},
		"serving certificate for the loopback address": {
			spec:    serving,
			usage:   x509.ExtKeyUsageServerAuth,
			dnsName: "127.0.0.1",
			wantCN:  "apiserver",
		},
		"client certificate of an administrator": {
			spec:     Spec{CommonName: "admin", Organizations: []string{"system:masters"}, NotBefore: notBefore, NotAfter: notAfter},
			usage:    x509.ExtKeyUsageClientAuth,
			wantCN:   "admin",
			wantOrgs: []string{"system:masters"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pair, err := ca.Issue(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			// The pair must load as a TLS key pair, as the API server and clients do.
			if _, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM); err != nil {
				t.Fatalf("Loading key pair: %v", err)
			}
			block, _ := pem.Decode(pair.CertPEM)
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: tc.dnsName, KeyUsages: []x509.ExtKeyUsage{tc.usage}}); err != nil {
				t.Errorf("Verify: %v", err)
			}
			if diff := cmp.Diff(tc.wantCN, cert.Subject.CommonName); diff != "" {
				t.Errorf("Common name (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantOrgs, cert.Subject.Organization); diff != "" {
				t.Errorf("Organizations (-want +got):\n%s", diff)
			}
			if !cert.NotBefore.Equal(notBefore) || !cert.NotAfter.Equal(notAfter) {
				t.Errorf("Valid from %v to %v, want %v to %v", cert.NotBefore, cert.NotAfter, notBefore, notAfter)
			}
		})
	}
}

func TestServingCertificateIsNotValidForOtherNamesOrAsAClient(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("test-ca", now.Add(-time.Minute), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue(Spec{CommonName: "webhook", DNSNames: []string{"webhook.svc"}, Server: true, NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	block, _ := pem.Decode(pair.CertPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "other.example"}); err == nil {
		t.Error("Valid for a name it was not issued for")
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("Valid as a client certificate")
	}
}

func TestSigningKeyPairMatches(t *testing.T) {
	private, public, err := NewSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	privBlock, _ := pem.Decode(private)
	key, err := x509.ParseECPrivateKey(privBlock.Bytes)
	if err != nil {
		t.Fatalf("Parsing private key: %v", err)
	}
	pubBlock, _ := pem.Decode(public)
	pub, err := x509.ParsePKIXPublicKey(pubBlock.Bytes)
	if err != nil {
		t.Fatalf("Parsing public key: %v", err)
	}
	if !key.PublicKey.Equal(pub) {
		t.Error("The public key does not belong to the private key")
	}
}
