package charts_test

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// rulesOf returns the rules of every Role and ClusterRole in m, by "Kind/name".
func rulesOf(t *testing.T, m manifests) map[string][]rbacv1.PolicyRule {
	t.Helper()
	out := map[string][]rbacv1.PolicyRule{}
	for _, o := range m.all("ClusterRole") {
		var r rbacv1.ClusterRole
		into(t, o, &r)
		out["ClusterRole/"+r.Name] = r.Rules
	}
	for _, o := range m.all("Role") {
		var r rbacv1.Role
		into(t, o, &r)
		out["Role/"+r.Name] = r.Rules
	}
	return out
}

// grants reports whether rule allows verb on resource in the core group.
func grants(rule rbacv1.PolicyRule, resource, verb string) bool {
	anyOf := func(list []string, want ...string) bool {
		return slices.ContainsFunc(list, func(s string) bool { return slices.Contains(want, s) })
	}
	return anyOf(rule.APIGroups, "", "*") && anyOf(rule.Resources, resource, "*") && anyOf(rule.Verbs, verb, "*")
}

// The manager patches pods (the gate's test+remove) and may delete one only as a
// preemption victim past the lender's spec.preemption.blockedTimeout (docs/budgets.md,
// "When a PodDisruptionBudget refuses"); nothing else in the chart may update or delete
// a pod, and nothing may delete pods' subresources or collections.
func TestRBACNeverUpdatesOrDeletesPods(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{
		"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
	})
	for role, rules := range rulesOf(t, m) {
		for _, rule := range rules {
			for _, res := range rule.Resources {
				if res != "pods" && res != "*" && !strings.HasPrefix(res, "pods/") {
					continue
				}
				for _, verb := range []string{"update", "delete", "deletecollection"} {
					if role == "ClusterRole/quotagate-manager" && res == "pods" && verb == "delete" && !slices.Contains(rule.Verbs, "*") {
						continue // a victim past blockedTimeout
					}
					if grants(rbacv1.PolicyRule{APIGroups: rule.APIGroups, Resources: []string{res}, Verbs: rule.Verbs}, res, verb) {
						t.Errorf("%s grants %s on %s", role, verb, res)
					}
				}
			}
		}
	}
}

// builtinRoles are the roles of kube-apiserver's bootstrap policy that the chart binds for
// the visibility API's delegated authentication and authorization, with their rules.
var builtinRoles = map[string][]rbacv1.PolicyRule{
	"ClusterRole/system:auth-delegator": {
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	},
	"Role/extension-apiserver-authentication-reader": {
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"extension-apiserver-authentication"}, Verbs: []string{"get", "list", "watch"}},
	},
}

// What the manager's ServiceAccount may do, following the bindings the chart renders.
func TestManagerPermissions(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, nil)
	roles := rulesOf(t, m)
	managerSA := podSpecOf(t, m, "Deployment", "quotagate-manager").ServiceAccountName
	webhookSA := podSpecOf(t, m, "Deployment", "quotagate-webhook").ServiceAccountName

	bound := map[string][]rbacv1.PolicyRule{} // by ServiceAccount name
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, o := range m.all(kind) {
			var b rbacv1.RoleBinding // ClusterRoleBinding has the same fields
			into(t, o, &b)
			rules, ok := roles[b.RoleRef.Kind+"/"+b.RoleRef.Name]
			if builtin, isBuiltin := builtinRoles[b.RoleRef.Kind+"/"+b.RoleRef.Name]; isBuiltin {
				rules, ok = builtin, true
			}
			if !ok {
				t.Errorf("%s %s refers to %s %s, which the chart does not render", kind, b.Name, b.RoleRef.Kind, b.RoleRef.Name)
			}
			if b.Name == "quotagate-metrics-reader-prometheus" {
				continue // Prometheus's, outside the release (TestPrometheusBinding)
			}
			for _, s := range b.Subjects {
				if s.Kind != rbacv1.ServiceAccountKind || s.Namespace != defaultNamespace {
					t.Errorf("%s %s binds %s %s/%s, want only ServiceAccounts of the release namespace", kind, b.Name, s.Kind, s.Namespace, s.Name)
				}
				bound[s.Name] = append(bound[s.Name], rules...)
			}
		}
	}

	for _, want := range []struct{ resource, verb string }{
		{"pods", "patch"}, {"pods", "list"}, {"pods", "watch"}, {"pods", "delete"}, {"pods/eviction", "create"}, {"namespaces", "watch"}, {"events", "create"},
	} {
		if !slices.ContainsFunc(bound[managerSA], func(r rbacv1.PolicyRule) bool { return grants(r, want.resource, want.verb) }) {
			t.Errorf("the manager (%s) may not %s %s", managerSA, want.verb, want.resource)
		}
	}
	if !slices.ContainsFunc(bound[managerSA], func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, "coordination.k8s.io") && slices.Contains(r.Resources, "leases") && slices.Contains(r.Verbs, "update")
	}) {
		t.Errorf("the manager (%s) may not update its leader election Lease", managerSA)
	}
	// The webhook reads nothing: it decides from the request alone.
	if rules := bound[webhookSA]; len(rules) != 0 {
		t.Errorf("the webhook's ServiceAccount is granted %v, want nothing", rules)
	}
}

// The manager may list and watch Secrets (whose data RBAC cannot keep from it) only
// when manager.watchSecrets lets pods wait for them, and then through a ClusterRole of
// its own, bound to the manager alone.
func TestSecretDependenciesRBAC(t *testing.T) {
	listsSecrets := func(m manifests) []string {
		var roles []string
		for role, rules := range rulesOf(t, m) {
			for _, r := range rules {
				if grants(r, "secrets", "list") && len(r.ResourceNames) == 0 {
					roles = append(roles, role)
				}
			}
		}
		slices.Sort(roles)
		return roles
	}
	if got := listsSecrets(mustInstall(t, defaultRelease, defaultNamespace, nil)); len(got) != 0 {
		t.Errorf("by default %v may list Secrets", got)
	}
	m := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{"manager": map[string]any{"watchSecrets": true}})
	if got := listsSecrets(m); !slices.Equal(got, []string{"ClusterRole/quotagate-manager-secret-dependencies"}) {
		t.Errorf("with manager.watchSecrets, %v may list Secrets; want the manager's secret-dependencies role alone", got)
	}
	var b rbacv1.ClusterRoleBinding
	into(t, m.find(t, "ClusterRoleBinding", "quotagate-manager-secret-dependencies"), &b)
	if b.RoleRef.Name != "quotagate-manager-secret-dependencies" || len(b.Subjects) != 1 || b.Subjects[0].Name != "quotagate-manager" || b.Subjects[0].Namespace != defaultNamespace {
		t.Errorf("the binding is %+v, want the role bound to the manager's ServiceAccount", b)
	}
}
