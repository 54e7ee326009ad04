package certrotation

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/quotagate/quotagate/test/localcluster"
)

const (
	testNamespace = "qg"
	testSecret    = "qg-webhook-internal-tls"
	testWebhook   = "qg-webhook"
	testManager   = "qg-manager"
	pollTimeout   = 2 * time.Minute
	// The CA's keys in the Secret, as cert-controller names them.
	caCertKey, caKeyKey = "ca.crt", "ca.key"
)

// An upgrade that adds a name (the visibility API's Service) must get a certificate for
// it, from the same CA, although cert-controller finds the old certificate valid for its
// first name. The rotator runs as the chart runs it: on the leader, under a
// ServiceAccount with the chart's RBAC for the rotator and nothing more.
func TestReissuesWhenNamesAreAdded(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	cluster := localcluster.StartForTest(t, localcluster.Options{Nodes: 1})
	ctx := t.Context()
	admin, err := client.New(cluster.Config(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	setUpRelease(t, admin)
	managerCfg, err := cluster.ServiceAccountConfig(ctx, testNamespace, testManager, 0)
	if err != nil {
		t.Fatal(err)
	}

	// The previous release's rotator issued the CA and a certificate for the webhook's
	// names and a name X, and injected the CA. (One process can run the rotator once:
	// controller names are unique per process; this is what its refresh writes.)
	const kept, added = "qg-webhook.example", "qg-visibility.qg.svc"
	old := config()
	old.Namespace = testNamespace
	old.ExtraDNSNames = []string{kept}
	first := issueAsRotator(t, admin, old.DNSNames())
	if valid, err := rotator.ValidCert(first[caCertKey], first[certKey], first[keyKey], old.DNSNames()[0],
		&[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, time.Now().Add(90*24*time.Hour)); !valid {
		t.Fatalf("cert-controller would replace the previous certificate anyway (%v): the test shows nothing", err)
	}

	// The upgrade adds Y.
	c := old
	c.CertDir = t.TempDir()
	c.ExtraDNSNames = []string{kept, added}
	log := runRotator(t, managerCfg, admin, c)
	second := secretData(t, admin)
	if !bytes.Equal(first[caCertKey], second[caCertKey]) || !bytes.Equal(first[caKeyKey], second[caKeyKey]) {
		t.Error("the CA changed: clients trusting the old caBundle would reject the new certificate")
	}
	for _, name := range c.DNSNames() {
		if err := verify(second[caCertKey], second[certKey], name); err != nil {
			t.Errorf("the new certificate against the kept CA, for %s: %v", name, err)
		}
	}
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	if err := admin.Get(ctx, types.NamespacedName{Name: testWebhook}, &mwc); err != nil {
		t.Fatal(err)
	}
	if got := mwc.Webhooks[0].ClientConfig.CABundle; !bytes.Equal(got, second[caCertKey]) {
		t.Errorf("caBundle is not the Secret's ca.crt:\n%s", got)
	}
	if got := log(); !strings.Contains(got, "lacks DNS names") || !strings.Contains(got, added) {
		t.Errorf("the manager's log does not name the missing %s:\n%s", added, got)
	}

	// Names unchanged: the check leaves the certificate alone.
	check := &nameCheck{reader: admin, writer: admin, secret: types.NamespacedName{Namespace: testNamespace, Name: testSecret},
		names: c.DNSNames(), log: logr.Discard()}
	var s corev1.Secret
	if err := admin.Get(ctx, check.secret, &s); err != nil {
		t.Fatal(err)
	}
	if missing, err := check.dropCertLackingNames(ctx); err != nil || missing != nil {
		t.Errorf("the check with the same names: missing %v, error %v; want neither", missing, err)
	}
	var after corev1.Secret
	if err := admin.Get(ctx, check.secret, &after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != s.ResourceVersion {
		t.Error("the check wrote the Secret although the certificate has every name")
	}

	t.Run("a deleted Secret is recreated, filled and its CA injected", func(t *testing.T) {
		// The rotator is still running, as the leader.
		var gone corev1.Secret
		if err := admin.Get(ctx, check.secret, &gone); err != nil {
			t.Fatal(err)
		}
		if err := admin.Delete(ctx, &gone); err != nil {
			t.Fatalf("deleting the Secret: %v", err)
		}
		var again corev1.Secret
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, pollTimeout, true, func(ctx context.Context) (bool, error) {
			if err := admin.Get(ctx, check.secret, &again); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			var mwc admissionregistrationv1.MutatingWebhookConfiguration
			if err := admin.Get(ctx, types.NamespacedName{Name: testWebhook}, &mwc); err != nil {
				return false, err
			}
			return again.UID != gone.UID && len(again.Data[certKey]) > 0 &&
				bytes.Equal(mwc.Webhooks[0].ClientConfig.CABundle, again.Data[caCertKey]), nil
		})
		if err != nil {
			t.Fatalf("waiting for a new Secret with a certificate whose CA is the caBundle: %v", err)
		}
		if bytes.Equal(again.Data[caKeyKey], second[caKeyKey]) {
			t.Error("the recreated Secret holds the deleted one's CA key")
		}
		for _, name := range c.DNSNames() {
			if err := verify(again.Data[caCertKey], again.Data[certKey], name); err != nil {
				t.Errorf("the new certificate against the new CA, for %s: %v", name, err)
			}
		}
		if again.Labels["app.kubernetes.io/managed-by"] != "Helm" || again.Annotations["meta.helm.sh/release-name"] != "qg" {
			t.Errorf("labels %v, annotations %v: want the deleted Secret's (Helm's ownership)", again.Labels, again.Annotations)
		}
		var mwc admissionregistrationv1.MutatingWebhookConfiguration
		if err := admin.Get(ctx, types.NamespacedName{Name: testWebhook}, &mwc); err != nil {
			t.Fatal(err)
		}
		want := []metav1.OwnerReference{{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration",
			Name: testWebhook, UID: mwc.UID}}
		if diff := cmp.Diff(want, again.OwnerReferences); diff != "" {
			t.Errorf("owner of the recreated Secret (-want +got):\n%s", diff)
		}
		if got := log(); !strings.Contains(got, "Created the missing certificate Secret") {
			t.Errorf("the manager's log does not say it recreated the Secret:\n%s", got)
		}
	})
}

// issueAsRotator fills the Secret and the caBundle as the rotator does on a first
// install, for names, and returns the Secret's data.
func issueAsRotator(t *testing.T, admin client.Client, names []string) map[string][]byte {
	t.Helper()
	cr := &rotator.CertRotator{CAName: caName, CAOrganization: caOrganization, DNSName: names[0], ExtraDNSNames: names[1:],
		ExtKeyUsages: &[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	now := time.Now()
	ca, err := cr.CreateCACert(now.Add(-time.Hour), now.Add(10*365*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := cr.CreateCertPEM(ca, now.Add(-time.Hour), now.Add(365*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var s corev1.Secret
	if err := admin.Get(t.Context(), types.NamespacedName{Namespace: testNamespace, Name: testSecret}, &s); err != nil {
		t.Fatal(err)
	}
	s.Data = map[string][]byte{caCertKey: ca.CertPEM, caKeyKey: ca.KeyPEM, certKey: cert, keyKey: key}
	if err := admin.Update(t.Context(), &s); err != nil {
		t.Fatal(err)
	}
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	if err := admin.Get(t.Context(), types.NamespacedName{Name: testWebhook}, &mwc); err != nil {
		t.Fatal(err)
	}
	mwc.Webhooks[0].ClientConfig.CABundle = ca.CertPEM
	if err := admin.Update(t.Context(), &mwc); err != nil {
		t.Fatal(err)
	}
	return s.Data
}

// setUpRelease creates what the chart creates for the rotator: the empty Secret, a
// webhook configuration, and the rotator's Role and ClusterRole
// (charts/quotagate/templates/cert-rotator.yaml, pinned by charts/certrotator_test.go),
// plus the leader election rights (Lease, events) of the manager's role.
func setUpRelease(t *testing.T, admin client.Client) {
	t.Helper()
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: testManager, Namespace: testNamespace}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testSecret,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm"},
			Annotations: map[string]string{"meta.helm.sh/release-name": "qg", "meta.helm.sh/release-namespace": testNamespace},
		}, Type: corev1.SecretTypeOpaque},
		&admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: testWebhook},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: "gate.quotagate.io",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{
					Service: &admissionregistrationv1.ServiceReference{Namespace: testNamespace, Name: testWebhook},
				},
				// Nothing in the test is sent to it.
				ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"never": "matches"}},
				FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
			}},
		},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "cert-rotator"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{testSecret}, Verbs: []string{"get", "list", "watch", "update"}},
				{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
				{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "cert-rotator"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cert-rotator"},
			Subjects:   subject,
		},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "qg-cert-rotator"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations"},
				ResourceNames: []string{testWebhook}, Verbs: []string{"get", "list", "watch", "update"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "qg-cert-rotator"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "qg-cert-rotator"},
			Subjects:   subject,
		},
	}
	for _, o := range objs {
		if err := admin.Create(t.Context(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// runRotator runs a leader-elected manager with the rotator until the Secret holds a
// certificate for every name of c and the rotator reports it delivered; the manager runs
// on until the test ends. It returns a func that reads the manager's log so far.
func runRotator(t *testing.T, cfg *rest.Config, admin client.Client, c Config) func() string {
	t.Helper()
	var (
		mu  sync.Mutex
		log strings.Builder
	)
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		log.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme.Scheme,
		Logger:                        logger,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionNamespace:       testNamespace,
		LeaderElectionID:              testManager,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		t.Fatalf("creating the manager: %v", err)
	}
	ready, err := Add(mgr, c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	mounted := make(chan struct{})
	go func() { defer close(mounted); mountSecret(ctx, admin, c.CertDir) }()
	t.Cleanup(func() {
		cancel()
		<-mounted
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	select {
	case <-ready:
	case err := <-done:
		done <- err
		t.Fatalf("the manager stopped before the certificate was delivered: %v", err)
	case <-time.After(pollTimeout):
		t.Fatal("the certificate was not delivered in time")
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, pollTimeout, true, func(ctx context.Context) (bool, error) {
		var s corev1.Secret
		if err := admin.Get(ctx, types.NamespacedName{Namespace: testNamespace, Name: testSecret}, &s); err != nil {
			return false, err
		}
		return len(s.Data[certKey]) > 0 && missingNames(s.Data[certKey], c.DNSNames()) == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for a certificate for %v: %v", c.DNSNames(), err)
	}
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return log.String()
	}
}

// mountSecret plays the kubelet: it writes the Secret's keys into dir, where
// cert-controller waits for tls.crt, until ctx ends.
func mountSecret(ctx context.Context, admin client.Client, dir string) {
	_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var s corev1.Secret
		if err := admin.Get(ctx, types.NamespacedName{Namespace: testNamespace, Name: testSecret}, &s); err != nil {
			return false, nil
		}
		for k, v := range s.Data {
			_ = os.WriteFile(filepath.Join(dir, k), v, 0o600)
		}
		return false, nil
	})
}

func secretData(t *testing.T, admin client.Client) map[string][]byte {
	t.Helper()
	var s corev1.Secret
	if err := admin.Get(t.Context(), types.NamespacedName{Namespace: testNamespace, Name: testSecret}, &s); err != nil {
		t.Fatal(err)
	}
	return s.Data
}

// verify checks certPEM as a TLS client would for name, trusting caPEM only.
func verify(caPEM, certPEM []byte, name string) error {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return errors.New("no PEM block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return err
	}
	_, err = cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}
