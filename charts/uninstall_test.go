package charts_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Uninstalling must not strand gated pods, nor fail pod creates: a pre-delete hook Job,
// running as the manager (the identity the gate guard lets remove the gate), deletes the
// release's webhook configuration and then releases every gated pod.
func TestPreDeleteHookTakesTheWebhookOutAndReleases(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, nil)
	var job batchv1.Job
	into(t, m.find(t, "Job", ""), &job)
	if diff := cmp.Diff(map[string]string{
		"helm.sh/hook":               "pre-delete",
		"helm.sh/hook-weight":        "0",
		"helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
	}, job.Annotations); diff != "" {
		t.Errorf("hook Job annotations (-want +got):\n%s", diff)
	}
	if job.Spec.BackoffLimit == nil || job.Spec.ActiveDeadlineSeconds == nil {
		t.Errorf("hook Job needs a backoffLimit and an activeDeadlineSeconds, got %v and %v", job.Spec.BackoffLimit, job.Spec.ActiveDeadlineSeconds)
	}
	spec := job.Spec.Template.Spec
	managerSA := podSpecOf(t, m, "Deployment", "quotagate-manager").ServiceAccountName
	if spec.ServiceAccountName != managerSA {
		t.Errorf("hook runs as %q, want the manager's ServiceAccount %q", spec.ServiceAccountName, managerSA)
	}
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %s, want Never", spec.RestartPolicy)
	}
	mwc := m.find(t, "MutatingWebhookConfiguration", "")
	c := spec.Containers[0]
	want := []string{"/manager", "release", "--all", "--webhook-configuration=" + mwc.GetName()}
	if diff := cmp.Diff(want, append(c.Command, c.Args...)); diff != "" {
		t.Errorf("hook command (-want +got):\n%s", diff)
	}

	off := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{"releaseOnUninstall": map[string]any{"enabled": false}})
	if len(off.Hooks) != 0 {
		t.Errorf("releaseOnUninstall.enabled=false still renders %d hooks", len(off.Hooks))
	}
}

// The hook's one extra permission is exactly: delete the release's own
// MutatingWebhookConfiguration, by name, bound to the identity the Job runs as, and only
// while the hook runs (the RBAC objects are hooks created before the Job and deleted after
// it). Nothing outside the hook may touch webhook configurations.
func TestPreDeleteHookRBACIsTheOneWebhookConfiguration(t *testing.T) {
	for name, release := range map[string]struct{ name, namespace string }{
		"default":       {defaultRelease, defaultNamespace},
		"other release": {"edge", "gates"},
	} {
		t.Run(name, func(t *testing.T) {
			m := mustInstall(t, release.name, release.namespace, nil)
			mwc := m.find(t, "MutatingWebhookConfiguration", "")
			jobSA := podSpecOf(t, m, "Job", "").ServiceAccountName
			jobWeight := hookWeight(t, m.find(t, "Job", ""))

			roles := map[string][]rbacv1.PolicyRule{}
			for _, o := range m.Hooks {
				switch o.GetKind() {
				case "Job":
				case "ClusterRole":
					var r rbacv1.ClusterRole
					into(t, o, &r)
					roles[r.Name] = r.Rules
				case "ClusterRoleBinding":
				default:
					t.Errorf("unexpected hook %s %s", o.GetKind(), o.GetName())
				}
				if o.GetKind() != "Job" {
					if w := hookWeight(t, o); w >= jobWeight {
						t.Errorf("hook %s %s has weight %d, want below the Job's %d (created first)", o.GetKind(), o.GetName(), w, jobWeight)
					}
					if got := o.GetAnnotations()["helm.sh/hook-delete-policy"]; got != "before-hook-creation,hook-succeeded,hook-failed" {
						t.Errorf("hook %s %s delete policy %q: it must not outlive the uninstall", o.GetKind(), o.GetName(), got)
					}
				}
			}
			if len(roles) != 1 {
				t.Fatalf("want one hook ClusterRole, got %d", len(roles))
			}
			want := []rbacv1.PolicyRule{{
				APIGroups:     []string{"admissionregistration.k8s.io"},
				Resources:     []string{"mutatingwebhookconfigurations"},
				ResourceNames: []string{mwc.GetName()},
				Verbs:         []string{"delete"},
			}}
			bindings := 0
			for _, o := range m.Hooks {
				if o.GetKind() != "ClusterRoleBinding" {
					continue
				}
				bindings++
				var b rbacv1.ClusterRoleBinding
				into(t, o, &b)
				if diff := cmp.Diff(want, roles[b.RoleRef.Name]); diff != "" {
					t.Errorf("rules bound by hook %s (-want +got):\n%s", b.Name, diff)
				}
				wantSubjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: jobSA, Namespace: release.namespace}}
				if diff := cmp.Diff(wantSubjects, b.Subjects); diff != "" {
					t.Errorf("hook %s subjects (-want +got): want the Job's ServiceAccount only\n%s", b.Name, diff)
				}
			}
			if bindings != 1 {
				t.Errorf("want one hook ClusterRoleBinding, got %d", bindings)
			}

			// No role that outlives the hook may delete a webhook configuration, nor touch
			// any but the release's own: the certificate rotator updates its caBundle
			// (TestSelfManagedCertificateRBAC checks that rule exactly).
			for role, rules := range rulesOf(t, manifests{Objects: m.Objects}) {
				for _, r := range rules {
					if !slices.ContainsFunc(r.Resources, func(s string) bool {
						return s == "*" || s == "mutatingwebhookconfigurations" || s == "validatingwebhookconfigurations"
					}) {
						continue
					}
					deletes := slices.ContainsFunc(r.Verbs, func(v string) bool { return v == "*" || strings.HasPrefix(v, "delete") })
					if deletes || !slices.Equal(r.ResourceNames, []string{mwc.GetName()}) {
						t.Errorf("%s grants %v on %v %v outside the uninstall hook", role, r.Verbs, r.Resources, r.ResourceNames)
					}
				}
			}
		})
	}
}

func hookWeight(t *testing.T, o *unstructured.Unstructured) int {
	t.Helper()
	w, err := strconv.Atoi(o.GetAnnotations()["helm.sh/hook-weight"])
	if err != nil {
		t.Fatalf("%s %s: helm.sh/hook-weight: %v", o.GetKind(), o.GetName(), err)
	}
	return w
}
