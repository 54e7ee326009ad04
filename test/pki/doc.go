// Package pki generates the certificates of a local control plane and of the
// processes it calls: a self-signed CA, serving and client certificates signed by it,
// and key pairs, all PEM-encoded as kube-apiserver and crypto/tls read them.
//
// Keys are ECDSA P-256: generating one takes microseconds, where an RSA key would cost
// a noticeable part of a test's start on a busy machine. The API server accepts ECDSA
// for serving, client certificates and ServiceAccount tokens.
//
// Nothing here is meant for production: there is no revocation, no rotation and the
// keys live in memory and in whatever files the caller writes.
package pki
