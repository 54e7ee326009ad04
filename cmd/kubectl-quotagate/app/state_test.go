package app

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

func TestOpenClose(t *testing.T) {
	tests := map[string]struct {
		args      []string
		wantOut   string
		wantState map[string]v1alpha1.BudgetState // by ns/name, or name for ClusterBudgets
	}{
		"close a Budget": {
			args:      []string{"close", "team-a", "-n", "team-a"},
			wantOut:   "Budget team-a/team-a: spec.state set to Closed\n",
			wantState: map[string]v1alpha1.BudgetState{"team-a/team-a": v1alpha1.StateClosed, "team-b/team-b": v1alpha1.StateOpen, "org": v1alpha1.StateOpen},
		},
		"close a ClusterBudget": {
			args:      []string{"close", "clusterbudget/org"},
			wantOut:   "ClusterBudget org: spec.state set to Closed\n",
			wantState: map[string]v1alpha1.BudgetState{"team-a/team-a": v1alpha1.StateOpen, "team-b/team-b": v1alpha1.StateOpen, "org": v1alpha1.StateClosed},
		},
		"close a Budget with --dry-run=client": {
			args:      []string{"close", "team-a", "-n", "team-a", "--dry-run=client"},
			wantOut:   "Budget team-a/team-a: spec.state set to Closed (dry run)\n",
			wantState: map[string]v1alpha1.BudgetState{"team-a/team-a": v1alpha1.StateOpen, "team-b/team-b": v1alpha1.StateOpen, "org": v1alpha1.StateOpen},
		},
		"open a Budget that is open": {
			args:      []string{"open", "team-b/team-b"},
			wantOut:   "Budget team-b/team-b: spec.state set to Open\n",
			wantState: map[string]v1alpha1.BudgetState{"team-a/team-a": v1alpha1.StateOpen, "team-b/team-b": v1alpha1.StateOpen, "org": v1alpha1.StateOpen},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := teamsWorld(t)
			out, errOut, err := run(t, w.env(nil), tc.args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", tc.args, err, errOut)
			}
			if diff := cmp.Diff(tc.wantOut, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			got := map[string]v1alpha1.BudgetState{}
			var budgets v1alpha1.BudgetList
			var clusterBudgets v1alpha1.ClusterBudgetList
			if err := w.client.List(t.Context(), &budgets); err != nil {
				t.Fatal(err)
			}
			if err := w.client.List(t.Context(), &clusterBudgets); err != nil {
				t.Fatal(err)
			}
			for _, b := range budgets.Items {
				got[b.Namespace+"/"+b.Name] = b.Spec.State
			}
			for _, b := range clusterBudgets.Items {
				got[b.Name] = b.Spec.State
			}
			if diff := cmp.Diff(tc.wantState, got); diff != "" {
				t.Errorf("spec.state (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCloseMissingBudget(t *testing.T) {
	w := teamsWorld(t)
	_, _, err := run(t, w.env(nil), "close", "team-a/nope")
	want := `setting spec.state of Budget team-a/nope to Closed: budgets.quotagate.io "nope" not found`
	if err == nil || err.Error() != want {
		t.Errorf("close of a missing budget: got error %v, want %q", err, want)
	}
	var b v1alpha1.Budget
	if err := w.client.Get(t.Context(), client.ObjectKey{Namespace: "team-a", Name: "nope"}, &b); err == nil {
		t.Errorf("close created budget team-a/nope")
	}
}

func TestDryRunBadInput(t *testing.T) {
	w := teamsWorld(t)
	tests := map[string]struct {
		args []string
		want string
	}{
		"an unknown strategy": {args: []string{"close", "team-a/team-a", "--dry-run=maybe"}, want: `invalid dry-run value (maybe). Must be "none", "server", or "client"`},
		"a missing budget":    {args: []string{"close", "team-a/nope", "--dry-run=client"}, want: `reading Budget team-a/nope: budgets.quotagate.io "nope" not found`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, _, err := run(t, w.env(nil), tc.args...)
			if err == nil || err.Error() != tc.want || out != "" {
				t.Errorf("%v: got error %v and output %q, want error %q", tc.args, err, out, tc.want)
			}
		})
	}
}
