package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// The cluster's keys are ECDSA P-256: generating them takes microseconds, where RSA
// keys would cost a noticeable part of a test's start on a busy machine. The API
// server accepts ECDSA for serving, client certificates and ServiceAccount tokens.

// certValidity is long enough for any test or demo, short enough to be obviously local.
const certValidity = 365 * 24 * time.Hour

// certAuthority signs the API server's serving certificate and every client
// certificate. One CA serves both purposes: clients trust it for the server, and the
// server trusts it for client certificates.
type certAuthority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// keyPair is a PEM certificate and its PEM private key.
type keyPair struct {
	certPEM, keyPEM []byte
}

// certSpec says what a certificate is for.
type certSpec struct {
	commonName    string
	organizations []string
	dnsNames      []string
	ips           []net.IP
	server        bool // a serving certificate; otherwise a client one
}

func newCertAuthority(commonName string, now time.Time) (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-signing CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing CA: %w", err)
	}
	return &certAuthority{cert: cert, key: key, certPEM: encodeCert(der)}, nil
}

// issue creates a key and a certificate for it signed by the CA.
func (ca *certAuthority) issue(spec certSpec, now time.Time) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generating key for %s: %w", spec.commonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return keyPair{}, err
	}
	usage := x509.ExtKeyUsageClientAuth
	if spec.server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: spec.commonName, Organization: spec.organizations},
		DNSNames:     spec.dnsNames,
		IPAddresses:  spec.ips,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return keyPair{}, fmt.Errorf("signing certificate for %s: %w", spec.commonName, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{certPEM: encodeCert(der), keyPEM: keyPEM}, nil
}

// newSigningKey creates the key pair that signs and verifies ServiceAccount tokens.
func newSigningKey() (privatePEM, publicPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating service account signing key: %w", err)
	}
	privatePEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("encoding service account public key: %w", err)
	}
	return privatePEM, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), nil
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	return serial, nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}
