package charts_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

var (
	selfManaged     = map[string]any{"certManager": map[string]any{"enabled": false}}
	withCertManager = map[string]any{"certManager": map[string]any{"enabled": true}}
)

// By default (certManager.enabled=false): no cert-manager object at all (the chart
// installs on a cluster without cert-manager's CRDs), an empty Secret the manager fills,
// mounted by the webhook and the manager, and the manager told where everything is.
func TestSelfManagedCertificate(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, nil)
	if diff := cmp.Diff(mustInstall(t, defaultRelease, defaultNamespace, selfManaged).Objects, m.Objects); diff != "" {
		t.Errorf("the default differs from certManager.enabled=false (-false +default):\n%s", diff)
	}
	for _, o := range m.Objects {
		if strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/") {
			t.Errorf("certManager.enabled=false renders %s %s", o.GetKind(), o.GetName())
		}
	}
	mwc := m.find(t, "MutatingWebhookConfiguration", "")
	if got := mwc.GetAnnotations(); len(got) != 0 {
		t.Errorf("webhook configuration annotations = %v, want none (nothing for cert-manager's CA injector)", got)
	}

	const secretName = "quotagate-webhook-internal-tls"
	var secret corev1.Secret
	into(t, m.find(t, "Secret", secretName), &secret)
	if secret.Type != corev1.SecretTypeOpaque || len(secret.Data) != 0 || len(secret.StringData) != 0 {
		t.Errorf("Secret %s: type %q with %d keys, want an empty Opaque Secret (the chart must never overwrite what the manager writes)",
			secretName, secret.Type, len(secret.Data)+len(secret.StringData))
	}
	// The webhook mounts what it serves with, never the CA's key (ca.key), which the
	// rotator keeps in the same Secret.
	webhookMountsSecret(t, m, secretName,
		corev1.KeyToPath{Key: "tls.crt", Path: "tls.crt"}, corev1.KeyToPath{Key: "tls.key", Path: "tls.key"},
		corev1.KeyToPath{Key: "ca.crt", Path: "ca.crt"})

	var dep appsv1.Deployment
	into(t, m.find(t, "Deployment", "quotagate-manager"), &dep)
	ctr := dep.Spec.Template.Spec.Containers[0]
	for _, want := range []string{
		"--webhook-cert-secret=" + secretName,
		"--webhook-cert-namespace=" + defaultNamespace,
		"--webhook-configuration=" + mwc.GetName(),
		"--webhook-service=quotagate-webhook",
		"--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs",
	} {
		if !slices.Contains(ctr.Args, want) {
			t.Errorf("manager args lack %s: %v", want, ctr.Args)
		}
	}
	if diff := cmp.Diff([]corev1.Volume{{Name: "serving-cert", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: secretName}}}}, dep.Spec.Template.Spec.Volumes); diff != "" {
		t.Errorf("manager volumes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.VolumeMount{{Name: "serving-cert", ReadOnly: true,
		MountPath: "/tmp/k8s-webhook-server/serving-certs"}}, ctr.VolumeMounts); diff != "" {
		t.Errorf("manager volume mounts (-want +got):\n%s", diff)
	}

	if !strings.Contains(m.Notes, "managed by quotagate itself") {
		t.Errorf("NOTES.txt does not say quotagate manages the certificate:\n%s", m.Notes)
	}

	// The cert-manager choice renders none of it.
	cm := mustInstall(t, defaultRelease, defaultNamespace, withCertManager)
	if n := len(cm.all("Secret")); n != 0 {
		t.Errorf("certManager.enabled=true renders %d Secrets, want none (cert-manager writes the webhook's)", n)
	}
	if !strings.Contains(cm.Notes, "comes from cert-manager") {
		t.Errorf("NOTES.txt does not say cert-manager issues the certificate:\n%s", cm.Notes)
	}
	var cmDep appsv1.Deployment
	into(t, cm.find(t, "Deployment", "quotagate-manager"), &cmDep)
	for _, a := range cmDep.Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "--webhook-cert") {
			t.Errorf("certManager.enabled=true passes %s to the manager", a)
		}
	}
}

// The rotator's RBAC names its one Secret and its one webhook configuration, and may
// create a Secret in the release namespace (to recreate its own: RBAC cannot limit a
// create by name); nothing else in the chart may write Secrets or webhook configurations.
func TestSelfManagedCertificateRBAC(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, selfManaged)
	want := map[string][]rbacv1.PolicyRule{
		"Role/quotagate-manager-cert-rotator": {
			{APIGroups: []string{""}, Resources: []string{"secrets"},
				ResourceNames: []string{"quotagate-webhook-internal-tls"}, Verbs: []string{"get", "list", "watch", "update"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		},
		"ClusterRole/quotagate-manager-cert-rotator": {{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations"},
			ResourceNames: []string{"quotagate-webhook"}, Verbs: []string{"get", "list", "watch", "update"}}},
	}
	got := map[string][]rbacv1.PolicyRule{}
	for role, rules := range rulesOf(t, m) {
		for _, r := range rules {
			touches := slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "mutatingwebhookconfigurations") || slices.Contains(r.Resources, "*")
			if !touches || slices.Equal(r.Verbs, []string{"get"}) {
				continue
			}
			if _, ok := want[role]; !ok {
				// The pre-delete hook may delete the webhook configuration; that is its job.
				if role == "ClusterRole/quotagate-release-hook" || strings.Contains(role, "release") {
					continue
				}
				t.Errorf("%s grants %v on %v", role, r.Verbs, r.Resources)
				continue
			}
			got[role] = append(got[role], r)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules on Secrets and webhook configurations (-want +got):\n%s", diff)
	}
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		var b rbacv1.RoleBinding
		into(t, m.find(t, kind, "quotagate-manager-cert-rotator"), &b)
		if len(b.Subjects) != 1 || b.Subjects[0].Name != "quotagate-manager" || b.Subjects[0].Namespace != defaultNamespace {
			t.Errorf("%s binds %v, want the manager's ServiceAccount", kind, b.Subjects)
		}
	}
}
