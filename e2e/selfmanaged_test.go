//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/quotagate/quotagate/test/localinstall"
)

// TestSelfManagedCertificates installs the chart with its default certificates
// (certManager.enabled=false) on a control plane without cert-manager: the manager's
// rotator issues the certificate into the chart's Secret and injects the CA, under the
// chart's RBAC, and pods are gated and admitted through it; a forced renewal and a forced
// new CA keep pod creates working, and helm upgrade keeps the certificate.
// (TestUserJourney runs the full journey in both modes.)
func TestSelfManagedCertificates(t *testing.T) {
	began := time.Now()
	e := setUpWith(t, localinstall.Options{})
	t.Logf("Control plane up and quotagate installed (self-managed certificate) in %v", time.Since(began).Round(time.Millisecond))
	ctx := t.Context()

	if _, err := e.cs.Discovery().ServerResourcesForGroupVersion("cert-manager.io/v1"); !apierrors.IsNotFound(err) {
		t.Fatalf("cert-manager's API is served (err %v): this mode must not need it", err)
	}
	ca := injectedCA(t, e)
	secret := certSecret(t, e)
	for _, k := range []string{"ca.crt", "ca.key", "tls.crt", "tls.key"} {
		if len(secret.Data[k]) == 0 {
			t.Errorf("Secret %s has no %s", secret.Name, k)
		}
	}
	if !bytes.Equal(secret.Data["ca.crt"], pemOf(ca)) {
		t.Error("the caBundle is not the Secret's ca.crt")
	}
	serving := served(t, e, ca)
	wantDNS := "quotagate-webhook." + e.inst.Namespace() + ".svc"
	if !slices.Contains(serving.DNSNames, wantDNS) {
		t.Errorf("the serving certificate is for %v, want %s among them", serving.DNSNames, wantDNS)
	}

	t.Run("a pod is gated by the webhook, then admitted", func(t *testing.T) {
		fatalIf(t, e.c.Create(ctx, enabledNamespace(streamNS)), "creating namespace "+streamNS)
		fatalIf(t, e.c.Create(ctx, churnBudget(streamNS)), "creating the Budget of "+streamNS)
		pod, err := e.cs.CoreV1().Pods(streamNS).Create(ctx, streamPod(streamNS, "first"), metav1.CreateOptions{})
		fatalIf(t, err, "creating a pod")
		if !hasGate(pod) {
			t.Fatalf("pod %s was created without the gate: the webhook was not called", pod.Name)
		}
		waitFor(t, "the manager to admit the pod", time.Minute, func() (bool, string) {
			p, err := e.cs.CoreV1().Pods(streamNS).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return !hasGate(p), fmt.Sprintf("gates %v", p.Spec.SchedulingGates)
		})
	})
	t.Run("the rotator may write only its Secret and its webhook configuration", func(t *testing.T) {
		testRotatorRBAC(t, e)
	})
	t.Run("a renewed serving certificate keeps the CA, with no failed create", func(t *testing.T) {
		s := startPodStream(ctx, e.cs, streamNS, "renew")
		defer s.Stop()
		// What the rotator does before expiry, forced: the serving certificate is gone.
		updateCertSecret(t, e, func(data map[string][]byte) { delete(data, "tls.crt"); delete(data, "tls.key") })
		waitServed(t, e, ca, serving)
		waitCreates(t, s, 10)
		s.Stop()
		if got := injectedCA(t, e); !got.Equal(ca) {
			t.Errorf("the caBundle changed to %s, want the CA kept", got.Subject)
		}
		s.checkAllGated(t, "the renewal")
		serving = served(t, e, ca)
	})
	t.Run("a new CA is injected and pod creates keep working", func(t *testing.T) {
		s := startPodStream(ctx, e.cs, streamNS, "newca")
		defer s.Stop()
		updateCertSecret(t, e, func(data map[string][]byte) { clear(data) })
		var newCA *x509.Certificate
		waitFor(t, "a new CA in the caBundle", time.Minute, func() (bool, string) {
			newCA = injectedCA(t, e)
			return !newCA.Equal(ca), "serial " + newCA.SerialNumber.String()
		})
		waitServed(t, e, newCA, serving)
		// The API server's new caBundle and the webhook's reload land a moment apart:
		// creates may fail in between, never after both.
		_, _, _, before := s.counts()
		waitCreates(t, s, 10)
		s.Stop()
		created, _, _, failures := s.counts()
		t.Logf("%d pods created through the new CA, %d failed while the webhook reloaded", created, len(before))
		for _, err := range failures[len(before):] {
			t.Errorf("a create failed after the new CA was served: %v", err)
		}
		ca, serving = newCA, served(t, e, newCA)
	})
	t.Run("helm upgrade keeps the certificate", func(t *testing.T) {
		before := certSecret(t, e).Data
		fatalIf(t, e.inst.Upgrade(ctx, map[string]any{"manager": map[string]any{"logLevel": "debug"}}), "upgrading")
		if !slices.Contains(e.inst.ManagerArgs(), "--zap-log-level=debug") {
			t.Fatalf("the upgrade did not restart the manager with the new values: %v", e.inst.ManagerArgs())
		}
		// The restarted manager's rotator has looked at the Secret when its webhook
		// configuration has been reconciled again; give it that long.
		time.Sleep(5 * time.Second)
		after := certSecret(t, e).Data
		for _, k := range []string{"ca.crt", "tls.crt", "tls.key"} {
			if !bytes.Equal(before[k], after[k]) {
				t.Errorf("the upgrade changed the Secret's %s", k)
			}
		}
		if got := injectedCA(t, e); !got.Equal(ca) {
			t.Error("the upgrade changed the caBundle")
		}
		if got := served(t, e, ca); !got.Equal(serving) {
			t.Error("the webhook serves another certificate after the upgrade")
		}
	})
	t.Logf("Took %v", time.Since(began).Round(time.Millisecond))
}

// testRotatorRBAC checks, as the manager's ServiceAccount against the real API server,
// that its rotator can read and write its Secret and its webhook configuration, and
// nothing else of the kind (but create a Secret in its namespace, to recreate its own).
func testRotatorRBAC(t *testing.T, e env) {
	ctx := t.Context()
	ns, own := e.inst.Namespace(), e.inst.WebhookCertSecret()
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-the-rotators"}, StringData: map[string]string{"k": "v"}}
	_, err := e.cs.CoreV1().Secrets(ns).Create(ctx, other, metav1.CreateOptions{})
	fatalIf(t, err, "creating another Secret")
	otherMWC := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "not-the-rotators"}}
	_, err = e.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, otherMWC, metav1.CreateOptions{})
	fatalIf(t, err, "creating another webhook configuration")

	cfg := rest.CopyConfig(e.admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: e.inst.ManagerUsername()}
	as, err := kubernetes.NewForConfig(cfg)
	fatalIf(t, err, "building the manager's client")
	secrets, hooks := as.CoreV1().Secrets(ns), as.AdmissionregistrationV1().MutatingWebhookConfigurations()
	adminSecrets, adminHooks := e.cs.CoreV1().Secrets(ns), e.cs.AdmissionregistrationV1().MutatingWebhookConfigurations()

	allowed := map[string]error{}
	denied := map[string]error{}
	s, err := secrets.Get(ctx, own, metav1.GetOptions{})
	allowed["get its Secret"] = err
	if err == nil {
		_, allowed["update its Secret"] = secrets.Update(ctx, s, metav1.UpdateOptions{})
	}
	_, allowed["list its Secret by name"] = secrets.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + own})
	w, err := hooks.Get(ctx, e.inst.WebhookConfiguration(), metav1.GetOptions{})
	allowed["get its webhook configuration"] = err
	if err == nil {
		_, allowed["update its webhook configuration"] = hooks.Update(ctx, w, metav1.UpdateOptions{})
	}
	_, allowed["list its webhook configuration by name"] = hooks.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + e.inst.WebhookConfiguration()})

	_, denied["get another Secret"] = secrets.Get(ctx, other.Name, metav1.GetOptions{})
	_, denied["list every Secret"] = secrets.List(ctx, metav1.ListOptions{})
	// It may create a Secret in the release namespace, to recreate its own once deleted
	// (RBAC cannot limit a create to one name), and nowhere else.
	_, allowed["create a Secret in its namespace"] = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{})
	_, denied["create a Secret in another namespace"] = as.CoreV1().Secrets(metav1.NamespaceDefault).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{})
	denied["delete its Secret"] = secrets.Delete(ctx, own, metav1.DeleteOptions{})
	if o, err := adminSecrets.Get(ctx, other.Name, metav1.GetOptions{}); err == nil {
		_, denied["update another Secret"] = secrets.Update(ctx, o, metav1.UpdateOptions{})
	}
	if o, err := adminHooks.Get(ctx, otherMWC.Name, metav1.GetOptions{}); err == nil {
		_, denied["update another webhook configuration"] = hooks.Update(ctx, o, metav1.UpdateOptions{})
	}
	_, denied["list every webhook configuration"] = hooks.List(ctx, metav1.ListOptions{})
	denied["delete its webhook configuration"] = hooks.Delete(ctx, e.inst.WebhookConfiguration(), metav1.DeleteOptions{})

	for what, err := range allowed {
		if err != nil {
			t.Errorf("the manager cannot %s: %v", what, err)
		}
	}
	for what, err := range denied {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the manager may %s (err %v), want Forbidden", what, err)
		}
	}
	fatalIf(t, adminSecrets.Delete(ctx, other.Name, metav1.DeleteOptions{}), "deleting the other Secret")
	if err := adminSecrets.Delete(ctx, "new", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting the Secret the manager created: %v", err)
	}
	fatalIf(t, adminHooks.Delete(ctx, otherMWC.Name, metav1.DeleteOptions{}), "deleting the other webhook configuration")
}

func certSecret(t *testing.T, e env) *corev1.Secret {
	t.Helper()
	s, err := e.cs.CoreV1().Secrets(e.inst.Namespace()).Get(t.Context(), e.inst.WebhookCertSecret(), metav1.GetOptions{})
	fatalIf(t, err, "reading the webhook's Secret")
	return s
}

func updateCertSecret(t *testing.T, e env, change func(map[string][]byte)) {
	t.Helper()
	s := certSecret(t, e)
	change(s.Data)
	_, err := e.cs.CoreV1().Secrets(s.Namespace).Update(t.Context(), s, metav1.UpdateOptions{})
	fatalIf(t, err, "changing the webhook's Secret")
}

// injectedCA is the one CA in the webhook configuration's caBundle.
func injectedCA(t *testing.T, e env) *x509.Certificate {
	t.Helper()
	mwc, err := e.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(t.Context(), e.inst.WebhookConfiguration(), metav1.GetOptions{})
	fatalIf(t, err, "reading the webhook configuration")
	block, _ := pem.Decode(mwc.Webhooks[0].ClientConfig.CABundle)
	if block == nil {
		t.Fatalf("the caBundle is not PEM: %q", mwc.Webhooks[0].ClientConfig.CABundle)
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	fatalIf(t, err, "parsing the caBundle")
	if !ca.IsCA {
		t.Fatalf("the caBundle is %s, not a CA", ca.Subject)
	}
	return ca
}

func pemOf(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// served is the certificate the webhook presents, verified against ca under the name the
// API server dials.
func served(t *testing.T, e env, ca *x509.Certificate) *x509.Certificate {
	t.Helper()
	c, err := servedBy(t.Context(), e, ca)
	fatalIf(t, err, "connecting to the webhook")
	return c
}

func servedBy(ctx context.Context, e env, ca *x509.Certificate) (*x509.Certificate, error) {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	d := tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: e.inst.WebhookServerName(), MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(ctx, "tcp", e.inst.WebhookAddress())
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	tc, ok := conn.(*tls.Conn)
	if !ok {
		return nil, errors.New("not a TLS connection")
	}
	return tc.ConnectionState().PeerCertificates[0], nil
}

// waitServed waits until the webhook presents a certificate other than old, valid under ca.
func waitServed(t *testing.T, e env, ca, old *x509.Certificate) {
	t.Helper()
	waitFor(t, "the webhook to serve a new certificate", time.Minute, func() (bool, string) {
		c, err := servedBy(t.Context(), e, ca)
		if err != nil {
			return false, err.Error()
		}
		return !c.Equal(old), "serial " + c.SerialNumber.String()
	})
}

// waitCreates waits for n more pods of s to be created.
func waitCreates(t *testing.T, s *podStream, n int) {
	t.Helper()
	before, _, _, _ := s.counts()
	waitFor(t, fmt.Sprintf("%d more pod creates", n), time.Minute, func() (bool, string) {
		created, _, _, _ := s.counts()
		return created >= before+n, fmt.Sprintf("%d created", created-before)
	})
}
