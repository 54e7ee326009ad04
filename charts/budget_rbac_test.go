package charts_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
)

// The labels that fold a ClusterRole into the built-in view, edit and admin roles.
var aggregateLabels = []string{
	"rbac.authorization.k8s.io/aggregate-to-view",
	"rbac.authorization.k8s.io/aggregate-to-edit",
	"rbac.authorization.k8s.io/aggregate-to-admin",
}

var readVerbs = []string{"get", "list", "watch"}

// clusterRoles decodes every ClusterRole of m, by name.
func clusterRoles(t *testing.T, m manifests) map[string]rbacv1.ClusterRole {
	t.Helper()
	out := map[string]rbacv1.ClusterRole{}
	for _, o := range m.all("ClusterRole") {
		var r rbacv1.ClusterRole
		into(t, o, &r)
		out[r.Name] = r
	}
	return out
}

// Tenants holding view, edit or admin read Budgets and their status; nothing the chart
// aggregates into those roles writes anything, so no tenant can raise its own hard limits
// (edit and admin may ask a what-if, podsimulations, which stores nothing).
func TestBudgetViewerIsAggregatedReadOnly(t *testing.T) {
	roles := clusterRoles(t, mustInstall(t, defaultRelease, defaultNamespace, nil))
	viewer, ok := roles["quotagate-budget-viewer"]
	if !ok {
		t.Fatal("no ClusterRole quotagate-budget-viewer")
	}
	for _, l := range aggregateLabels {
		if viewer.Labels[l] != "true" {
			t.Errorf("quotagate-budget-viewer label %s = %q, want \"true\"", l, viewer.Labels[l])
		}
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{"quotagate.io"}, Resources: []string{"budgets", "budgets/status", "budgetwindows", "budgetwindows/status"}, Verbs: readVerbs}}
	if diff := cmp.Diff(want, viewer.Rules); diff != "" {
		t.Errorf("quotagate-budget-viewer rules (-want +got):\n%s", diff)
	}
	// config/default aggregates it too (TestKustomizeDefaultMatchesChart compares the rules).
	var fromConfig rbacv1.ClusterRole
	into(t, kustomizeBuild(t, "config/default").find(t, "ClusterRole", "quotagate-budget-viewer"), &fromConfig)
	for _, l := range aggregateLabels {
		if fromConfig.Labels[l] != "true" {
			t.Errorf("config/default quotagate-budget-viewer label %s = %q, want \"true\"", l, fromConfig.Labels[l])
		}
	}
	for name, r := range roles {
		if !slices.ContainsFunc(aggregateLabels, func(l string) bool { return r.Labels[l] == "true" }) {
			continue
		}
		for _, rule := range r.Rules {
			if isSimulation(rule) {
				// A what-if stores nothing: edit and admin may ask it, view may not.
				if r.Labels["rbac.authorization.k8s.io/aggregate-to-view"] == "true" {
					t.Errorf("%s aggregates create on podsimulations into view: a viewer may not create pods", name)
				}
				continue
			}
			for _, verb := range rule.Verbs {
				if !slices.Contains(readVerbs, verb) {
					t.Errorf("%s is aggregated into the built-in roles and grants %s on %v", name, verb, rule.Resources)
				}
			}
		}
	}
}

// isSimulation is a rule that grants only create on the visibility API's podsimulations,
// a what-if answered from the manager's memory that writes nothing.
func isSimulation(rule rbacv1.PolicyRule) bool {
	return slices.Equal(rule.APIGroups, []string{"visibility.quotagate.io"}) &&
		slices.Equal(rule.Resources, []string{"podsimulations"}) &&
		slices.Equal(rule.Verbs, []string{"create"})
}

func TestBudgetViewerAggregationCanBeTurnedOff(t *testing.T) {
	roles := clusterRoles(t, mustInstall(t, defaultRelease, defaultNamespace, map[string]any{
		"rbac": map[string]any{"aggregateToDefaultRoles": false},
	}))
	viewer, ok := roles["quotagate-budget-viewer"]
	if !ok {
		t.Fatal("no ClusterRole quotagate-budget-viewer: it must stay, to be bound by hand")
	}
	for name, r := range roles {
		for _, l := range aggregateLabels {
			if _, ok := r.Labels[l]; ok {
				t.Errorf("%s has label %s with rbac.aggregateToDefaultRoles=false", name, l)
			}
		}
	}
	if len(viewer.Rules) != 1 {
		t.Errorf("quotagate-budget-viewer rules %v, want the one read rule", viewer.Rules)
	}
}

// The platform's roles: budget-admin does everything to Budgets, ClusterBudgets, their
// status and Flavors; clusterbudget-viewer reads ClusterBudgets, flavor-viewer Flavors.
// None is aggregated anywhere.
func TestPlatformBudgetRoles(t *testing.T) {
	roles := clusterRoles(t, mustInstall(t, "acme", "acme-system", nil))
	admin, ok := roles["acme-quotagate-budget-admin"]
	if !ok {
		t.Fatal("no ClusterRole acme-quotagate-budget-admin")
	}
	allows := func(rules []rbacv1.PolicyRule, resource, verb string) bool {
		return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, "quotagate.io") && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
		})
	}
	for _, res := range []string{"budgets", "clusterbudgets"} {
		for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"} {
			if !allows(admin.Rules, res, verb) {
				t.Errorf("budget-admin may not %s %s", verb, res)
			}
		}
		for _, verb := range []string{"get", "update", "patch"} {
			if !allows(admin.Rules, res+"/status", verb) {
				t.Errorf("budget-admin may not %s %s/status", verb, res)
			}
		}
	}
	for _, res := range []string{"flavors", "budgetwindows", "clusterbudgetwindows"} {
		for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"} {
			if !allows(admin.Rules, res, verb) {
				t.Errorf("budget-admin may not %s %s", verb, res)
			}
		}
	}
	flavors, ok := roles["acme-quotagate-flavor-viewer"]
	if !ok {
		t.Fatal("no ClusterRole acme-quotagate-flavor-viewer")
	}
	if diff := cmp.Diff([]rbacv1.PolicyRule{{APIGroups: []string{"quotagate.io"}, Resources: []string{"flavors"}, Verbs: readVerbs}}, flavors.Rules); diff != "" {
		t.Errorf("flavor-viewer rules (-want +got):\n%s", diff)
	}
	reader, ok := roles["acme-quotagate-clusterbudget-viewer"]
	if !ok {
		t.Fatal("no ClusterRole acme-quotagate-clusterbudget-viewer")
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{"quotagate.io"}, Resources: []string{"clusterbudgets", "clusterbudgets/status", "clusterbudgetwindows", "clusterbudgetwindows/status"}, Verbs: readVerbs}}
	if diff := cmp.Diff(want, reader.Rules); diff != "" {
		t.Errorf("clusterbudget-viewer rules (-want +got):\n%s", diff)
	}
	for _, r := range []rbacv1.ClusterRole{admin, reader, flavors} {
		for _, l := range aggregateLabels {
			if _, ok := r.Labels[l]; ok {
				t.Errorf("%s is aggregated (%s)", r.Name, l)
			}
		}
	}
}
