package localcluster

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
	now := time.Now()
	ca, err := newCertAuthority("test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.certPEM)

	tests := map[string]struct {
		spec     certSpec
		usage    x509.ExtKeyUsage
		dnsName  string
		wantCN   string
		wantOrgs []string
	}{
		"serving certificate for a service name": {
			spec:    certSpec{commonName: "apiserver", dnsNames: []string{"kubernetes.default.svc"}, ips: []net.IP{net.IPv4(127, 0, 0, 1)}, server: true},
			usage:   x509.ExtKeyUsageServerAuth,
			dnsName: "kubernetes.default.svc",
			wantCN:  "apiserver",
		},
		"serving certificate for the loopback address": {
			spec:    certSpec{commonName: "apiserver", dnsNames: []string{"kubernetes.default.svc"}, ips: []net.IP{net.IPv4(127, 0, 0, 1)}, server: true},
			usage:   x509.ExtKeyUsageServerAuth,
			dnsName: "127.0.0.1",
			wantCN:  "apiserver",
		},
		"client certificate of an administrator": {
			spec:     certSpec{commonName: "admin", organizations: []string{"system:masters"}},
			usage:    x509.ExtKeyUsageClientAuth,
			wantCN:   "admin",
			wantOrgs: []string{"system:masters"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pair, err := ca.issue(tc.spec, now)
			if err != nil {
				t.Fatal(err)
			}
			// The pair must load as a TLS key pair, as the API server and clients do.
			if _, err := tls.X509KeyPair(pair.certPEM, pair.keyPEM); err != nil {
				t.Fatalf("Loading key pair: %v", err)
			}
			block, _ := pem.Decode(pair.certPEM)
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
		})
	}
}

func TestSigningKeyPairMatches(t *testing.T) {
	private, public, err := newSigningKey()
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
