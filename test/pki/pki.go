package pki

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

// CA is a self-signed certificate authority held in memory.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
	// CertPEM is the CA certificate, for clients and servers to trust.
	CertPEM []byte
}

// KeyPair is a PEM certificate and its PEM private key ("EC PRIVATE KEY").
type KeyPair struct {
	CertPEM, KeyPEM []byte
}

// Spec says what a certificate signed by a CA is for and when it is valid.
type Spec struct {
	CommonName    string
	Organizations []string
	DNSNames      []string
	IPs           []net.IP
	// Server makes a serving certificate (server auth); otherwise it is a client one.
	Server bool
	// NotBefore and NotAfter bound the validity; callers backdate NotBefore a little
	// so that a clock a moment behind does not reject a fresh certificate.
	NotBefore, NotAfter time.Time
}

// NewCA generates a key and a self-signed CA certificate valid from notBefore to
// notAfter, allowed to sign certificates and CRLs.
func NewCA(commonName string, notBefore, notAfter time.Time) (*CA, error) {
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
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-signing CA %s: %w", commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing CA %s: %w", commonName, err)
	}
	return &CA{cert: cert, key: key, CertPEM: encodeCert(der)}, nil
}

// KeyPEM is the CA's private key, PEM-encoded ("EC PRIVATE KEY"), for keeping a CA where
// a later process can load it with ParseCA (as cert-manager keeps one in a Secret).
func (ca *CA) KeyPEM() ([]byte, error) {
	key, ok := ca.key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("CA %s: key of type %T cannot be encoded", ca.cert.Subject.CommonName, ca.key)
	}
	return encodeKey(key)
}

// ParseCA loads a CA from its PEM certificate and PEM "EC PRIVATE KEY", as written by
// NewCA's CertPEM and KeyPEM.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	certBlock, _ := pem.Decode(certPEM)
	if certBlock == nil || certBlock.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("parsing CA: no PEM CERTIFICATE block")
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("parsing CA: certificate %s is not a CA", cert.Subject.CommonName)
	}
	keyBlock, _ := pem.Decode(keyPEM)
	if keyBlock == nil || keyBlock.Type != "EC PRIVATE KEY" {
		return nil, fmt.Errorf("parsing CA %s: no PEM EC PRIVATE KEY block", cert.Subject.CommonName)
	}
	key, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing CA %s key: %w", cert.Subject.CommonName, err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("parsing CA %s: the key does not match the certificate", cert.Subject.CommonName)
	}
	return &CA{cert: cert, key: key, CertPEM: certPEM}, nil
}

// Issue generates a key and a certificate for it signed by the CA.
func (ca *CA) Issue(spec Spec) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("generating key for %s: %w", spec.CommonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return KeyPair{}, err
	}
	usage := x509.ExtKeyUsageClientAuth
	if spec.Server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: spec.CommonName, Organization: spec.Organizations},
		DNSNames:     spec.DNSNames,
		IPAddresses:  spec.IPs,
		NotBefore:    spec.NotBefore,
		NotAfter:     spec.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("signing certificate for %s: %w", spec.CommonName, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{CertPEM: encodeCert(der), KeyPEM: keyPEM}, nil
}

// NewSigningKey generates a key pair for signing and verifying tokens, such as the
// API server's ServiceAccount tokens: the private key as "EC PRIVATE KEY" and the
// public key as "PUBLIC KEY" (PKIX).
func NewSigningKey() (privatePEM, publicPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating signing key: %w", err)
	}
	privatePEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("encoding public key: %w", err)
	}
	return privatePEM, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), nil
}

// newSerial returns a random positive serial number of at most 127 bits, which fits
// the 20 octets RFC 5280 allows.
func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
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
