package charts_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/internal/testbed/podtest"
)

// The chart's placement guard is config/policy's, with the release's manager (and the
// extra users) allowed, bound in the namespaces the release's webhook gates: the
// pkg/admission tests run config/policy's on a real API server.
func TestPlacementGuardMatchesConfigPolicy(t *testing.T) {
	cfg := kustomizeBuild(t, "config/policy")
	wantPolicy, wantBinding := cfg.policy(t, "quotagate-placement-guard")
	if wantBinding.Spec.PolicyName != wantPolicy.Name {
		t.Errorf("config/policy: binding names policy %q, want %q", wantBinding.Spec.PolicyName, wantPolicy.Name)
	}

	for name, tc := range map[string]struct {
		release, namespace string
		values             map[string]any
		wantAllowed        string
	}{
		"default release": {
			release: defaultRelease, namespace: defaultNamespace,
			wantAllowed: "['system:serviceaccount:quotagate-system:quotagate-manager']",
		},
		"another release with extra users": {
			release: "acme", namespace: "batch-system",
			values:      map[string]any{"guard": map[string]any{"extraAllowedUsers": []any{"alice"}}},
			wantAllowed: "['system:serviceaccount:batch-system:acme-quotagate-manager', 'alice']",
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := mustInstall(t, tc.release, tc.namespace, tc.values)
			policy, binding := m.policy(t, fullname(tc.release)+"-placement-guard")
			var mwc admissionregistrationv1.MutatingWebhookConfiguration
			into(t, m.find(t, "MutatingWebhookConfiguration", fullname(tc.release)+"-webhook"), &mwc)

			want := wantPolicy.Spec.DeepCopy()
			for i, v := range want.Variables {
				if v.Name == "allowed" {
					want.Variables[i].Expression = tc.wantAllowed
				}
			}
			if diff := cmp.Diff(*want, policy.Spec, celWhitespace); diff != "" {
				t.Errorf("policy spec (-want +chart):\n%s", diff)
			}
			// The gate guard lets the same users remove the gate.
			gateGuard, _ := m.policy(t, fullname(tc.release)+"-gate-guard")
			if diff := cmp.Diff(variable(t, gateGuard.Spec, "allowed"), variable(t, policy.Spec, "allowed")); diff != "" {
				t.Errorf("variables.allowed differs from the gate guard's (-gate guard +placement guard):\n%s", diff)
			}
			wantBindingSpec := wantBinding.Spec.DeepCopy()
			wantBindingSpec.PolicyName = policy.Name
			wantBindingSpec.MatchResources.NamespaceSelector.MatchExpressions[1].Values = []string{"kube-system", tc.namespace}
			if diff := cmp.Diff(*wantBindingSpec, binding.Spec); diff != "" {
				t.Errorf("binding spec (-want +chart):\n%s", diff)
			}
			// Tolerations are guarded exactly where the webhook gates new pods.
			if diff := cmp.Diff(mwc.Webhooks[0].NamespaceSelector, binding.Spec.MatchResources.NamespaceSelector); diff != "" {
				t.Errorf("binding namespaceSelector differs from the webhook's (-webhook +binding):\n%s", diff)
			}
		})
	}
}

// Evaluates the rendered policy's CEL the way the API server would for pod UPDATEs: a
// pod's tolerations may change while it is gated and once it is bound, not in between,
// unless the manager (or an extra user) changes them.
func TestPlacementGuardRefusesTolerationsBetweenAdmissionAndBinding(t *testing.T) {
	m := mustInstall(t, "acme", "batch-system", map[string]any{
		"guard": map[string]any{"extraAllowedUsers": []any{"alice"}},
	})
	policy, _ := m.policy(t, "acme-quotagate-placement-guard")
	manager := "system:serviceaccount:batch-system:" + podSpecOf(t, m, "Deployment", "acme-quotagate-manager").ServiceAccountName
	const tenant = "system:serviceaccount:team-a:ci"

	notReady := corev1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}
	flavor := corev1.Toleration{Key: "example.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	spot := corev1.Toleration{Key: "example.com/spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	shorter := notReady
	shorter.TolerationSeconds = ptr.To[int64](60)

	// pod is a pod of team-a carrying tolerations ts: gated (the quotagate gate),
	// admitted (none), held (another controller's gate only) or bound (to node-1).
	pod := func(state string, ts ...corev1.Toleration) map[string]any {
		b := podtest.New("p").NS("team-a")
		switch state {
		case "gated":
			b.Gated()
		case "admitted":
			b.AdmittedBy("team-a/team-a")
		case "held":
			b.AdmittedBy("team-a/team-a").Gates("example.com/hold")
		case "bound":
			b.AdmittedBy("team-a/team-a").NodeName("node-1")
		case "never gated":
		default:
			t.Fatalf("no pod state %q", state)
		}
		for _, tol := range ts {
			b.Toleration(tol)
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b.Obj())
		if err != nil {
			t.Fatal(err)
		}
		obj["apiVersion"], obj["kind"] = "v1", "Pod"
		return obj
	}

	for name, tc := range map[string]struct {
		old, new map[string]any
		user     string
		want     bool
	}{
		"a tenant adds a toleration to an admitted pod not bound yet":  {pod("admitted", notReady), pod("admitted", notReady, spot), tenant, false},
		"a tenant adds the first toleration of an admitted pod":        {pod("admitted"), pod("admitted", spot), tenant, false},
		"a tenant shortens a toleration's seconds":                     {pod("admitted", notReady), pod("admitted", shorter), tenant, false},
		"a tenant adds a toleration to a pod that never had the gate":  {pod("never gated"), pod("never gated", spot), tenant, false},
		"a tenant adds one while another controller's gate holds it":   {pod("held"), pod("held", spot), tenant, false},
		"a cluster admin adds a toleration to an admitted pod":         {pod("admitted"), pod("admitted", spot), "kubernetes-admin", false},
		"another release's manager adds one":                           {pod("admitted"), pod("admitted", spot), "system:serviceaccount:quotagate-system:quotagate-manager", false},
		"the manager adds one to an admitted pod":                      {pod("admitted"), pod("admitted", spot), manager, true},
		"an extra user adds one to an admitted pod":                    {pod("admitted"), pod("admitted", spot), "alice", true},
		"a tenant adds a toleration to a gated pod":                    {pod("gated", notReady), pod("gated", notReady, spot), tenant, true},
		"the manager's ungate patch adds its flavor's toleration":      {pod("gated", notReady), pod("admitted", notReady, flavor), manager, true},
		"a tenant adds a toleration to a bound pod":                    {pod("bound", notReady), pod("bound", notReady, spot), tenant, true},
		"a tenant labels an admitted pod, its tolerations as they are": {pod("admitted", notReady, flavor), labelled(pod("admitted", notReady, flavor), "app", "web"), tenant, true},
		"a tenant repeats a toleration the pod has":                    {pod("admitted", flavor), pod("admitted", flavor, flavor), tenant, true},
		"a tenant reorders the pod's tolerations":                      {pod("admitted", notReady, flavor), pod("admitted", flavor, notReady), tenant, true},
		// Removing the gate is the gate guard's to refuse.
		"an update that removes the gate and adds a toleration": {pod("gated"), pod("admitted", spot), tenant, true},
	} {
		t.Run(name, func(t *testing.T) {
			got, msg := evaluatePolicy(t, policy.Spec, tc.old, tc.new, tc.user)
			if got != tc.want {
				t.Errorf("allowed = %v (%s), want %v", got, msg, tc.want)
			}
		})
	}

	// The refusal names the pod, each toleration added or changed, the user, and what to do.
	everything := corev1.Toleration{Operator: corev1.TolerationOpExists}
	empty := corev1.Toleration{Key: "example.com/empty", Operator: corev1.TolerationOpEqual}
	_, msg := evaluatePolicy(t, policy.Spec, pod("admitted", notReady), pod("admitted", shorter, flavor, spot, everything, empty), tenant)
	want := "pod p in namespace team-a (quotagate.io/enabled=true) counts against its budgets and is not bound to a node yet: " +
		"its tolerations may not change until it is, and this update by " + tenant + " adds " +
		"node.kubernetes.io/not-ready:NoExecute for 60s, example.com/gpu=true:NoSchedule, example.com/spot:NoSchedule, *, example.com/empty=. " +
		"quotagate charged the pod on the flavors whose nodes it could reach without them; a toleration added now could let it " +
		"run on nodes it is not charged for. To tolerate more taints, create a new pod, which waits in its budget queue"
	if msg != want {
		t.Errorf("message\n%s\nwant\n%s", msg, want)
	}
}

// variable is the expression of the policy's variable name.
func variable(t *testing.T, spec admissionregistrationv1.ValidatingAdmissionPolicySpec, name string) string {
	t.Helper()
	for _, v := range spec.Variables {
		if v.Name == name {
			return v.Expression
		}
	}
	t.Fatalf("the policy has no variable %s", name)
	return ""
}
