package certrotation

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/quotagate/quotagate/test/pki"
)

func servingCert(t *testing.T, names ...string) []byte {
	t.Helper()
	now := time.Now()
	ca, err := pki.NewCA("test-ca", now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.Issue(pki.Spec{CommonName: "ignored.example", DNSNames: names, Server: true, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return kp.CertPEM
}

func TestMissingNames(t *testing.T) {
	const (
		webhook    = "qg-webhook.qg.svc"
		webhookCL  = "qg-webhook.qg.svc.cluster.local"
		visibility = "qg-visibility.qg.svc"
	)
	before := servingCert(t, webhook, webhookCL)
	tests := map[string]struct {
		cert []byte
		want []string
		// missing is what the check must add; nil leaves the certificate alone.
		missing []string
	}{
		"covers every name":                 {cert: before, want: []string{webhook, webhookCL}},
		"order does not matter":             {cert: before, want: []string{webhookCL, webhook}},
		"a name no longer wanted stays":     {cert: before, want: []string{webhook}},
		"a name added on upgrade":           {cert: before, want: []string{webhook, webhookCL, visibility}, missing: []string{visibility}},
		"the first name changed":            {cert: before, want: []string{"other.qg.svc", webhookCL}, missing: []string{"other.qg.svc"}},
		"missing names sorted, once each":   {cert: before, want: []string{"z.qg.svc", visibility, "z.qg.svc"}, missing: []string{visibility, "z.qg.svc"}},
		"DNS names ignore case":             {cert: before, want: []string{"QG-Webhook.qg.svc"}},
		"the common name is not a DNS name": {cert: before, want: []string{"ignored.example"}, missing: []string{"ignored.example"}},
		"the first certificate of a chain":  {cert: append(servingCert(t, webhook), before...), want: []string{webhookCL}, missing: []string{webhookCL}},
		// Left to cert-controller, which replaces a certificate it cannot use.
		"empty":                  {cert: nil, want: []string{webhook}},
		"not PEM":                {cert: []byte("not a certificate"), want: []string{webhook}},
		"a key, not certificate": {cert: []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"), want: []string{webhook}},
		"malformed DER":          {cert: []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), want: []string{webhook}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.missing, missingNames(tc.cert, tc.want)); diff != "" {
				t.Errorf("missingNames (-want +got):\n%s", diff)
			}
		})
	}
}
