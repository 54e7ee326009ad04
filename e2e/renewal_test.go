//go:build e2e

package e2e

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const renewals = 3

// The serving certificate renews (a new key, from the chart's CA) while pods are created
// all the time in an opted-in namespace: the caBundle stays the CA, the webhook reloads
// the new certificate from disk, and not one create fails.
func testCertificateRenewal(t *testing.T, e env, _ *podWatcher) {
	ctx := t.Context()
	caBundle := func() []byte {
		mwc, err := e.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, e.inst.WebhookConfiguration(), metav1.GetOptions{})
		fatalIf(t, err, "reading the webhook configuration")
		return mwc.Webhooks[0].ClientConfig.CABundle
	}
	before := caBundle()
	block, _ := pem.Decode(before)
	if block == nil {
		t.Fatalf("the caBundle is not PEM: %q", before)
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	fatalIf(t, err, "parsing the caBundle")
	if !ca.IsCA {
		t.Fatalf("the caBundle is %s, not a CA: it would change at every renewal", ca.Subject)
	}

	s := startPodStream(ctx, e.cs, streamNS, "renewal")
	defer s.Stop()
	serving, err := servedCert(ctx, e.inst.WebhookAddress(), before)
	fatalIf(t, err, "connecting to the webhook")
	for r := range renewals {
		createdBefore, _, _, _ := s.counts()
		fatalIf(t, e.inst.RenewWebhookCert(ctx), "renewing the webhook's certificate")
		waitFor(t, fmt.Sprintf("the webhook to serve renewal %d", r+1), time.Minute, func() (bool, string) {
			got, err := servedCert(ctx, e.inst.WebhookAddress(), before)
			if err != nil {
				return false, err.Error()
			}
			return !got.Equal(serving), "serial " + got.SerialNumber.String()
		})
		serving, err = servedCert(ctx, e.inst.WebhookAddress(), before)
		fatalIf(t, err, "connecting to the webhook")
		if !bytes.Equal(serving.RawIssuer, ca.RawSubject) {
			t.Errorf("renewal %d is issued by %s, want the CA %s", r+1, serving.Issuer, ca.Subject)
		}
		// Some creates go through the webhook on the new certificate before the next
		// renewal.
		waitFor(t, "pods created after the renewal", time.Minute, func() (bool, string) {
			created, _, _, _ := s.counts()
			return created >= createdBefore+10, fmt.Sprintf("%d created", created)
		})
		if after := caBundle(); !bytes.Equal(after, before) {
			t.Fatalf("renewal %d changed the caBundle", r+1)
		}
	}
	s.Stop()
	s.checkAllGated(t, fmt.Sprintf("%d renewals", renewals))
}
