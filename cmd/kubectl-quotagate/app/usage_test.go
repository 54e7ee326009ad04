package app

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// usage lists the pods charged to a budget in the teams world: the pods the core
// admitted, and web, which ran before team-a opted in; its TOTAL is the budget's
// status.used, which the world's statuses were written from.
func TestUsage(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"a Budget, by name": {
			args: []string{"usage", "team-a", "-n", "team-a"},
			want: "Budget team-a/team-a: 3 pods charged; hard pods=10, requests.cpu=4\n" +
				"POD        PODS   REQUESTS.CPU\n" +
				"train-2    1      1\n" +
				"train-hi   1      1\n" +
				"web        1      2\n" +
				"TOTAL      3      4\n",
		},
		"a Budget, largest first (docs/kubectl-plugin.md)": {
			args: []string{"usage", "team-a", "-n", "team-a", "--sort-by", "cpu"},
			want: "Budget team-a/team-a: 3 pods charged; hard pods=10, requests.cpu=4\n" +
				"POD        PODS   REQUESTS.CPU\n" +
				"web        1      2\n" +
				"train-2    1      1\n" +
				"train-hi   1      1\n" +
				"TOTAL      3      4\n",
		},
		"a ClusterBudget, largest first": {
			args: []string{"usage", "clusterbudget/org", "--sort-by", "cpu"},
			want: "ClusterBudget org: 5 pods charged; hard requests.cpu=8\n" +
				"NAMESPACE   POD        REQUESTS.CPU\n" +
				"team-b      batch-1    3\n" +
				"team-a      web        2\n" +
				"team-a      train-2    1\n" +
				"team-a      train-hi   1\n" +
				"team-b      batch-2    1\n" +
				"            TOTAL      8\n",
		},
		"--no-headers": {
			args: []string{"usage", "team-b/team-b", "--no-headers"},
			want: "batch-1   3\n" +
				"batch-2   1\n",
		},
		"-o name across namespaces": {
			args: []string{"usage", "clusterbudget/org", "-o", "name"},
			want: "team-a/pod/train-2\nteam-a/pod/train-hi\nteam-a/pod/web\nteam-b/pod/batch-1\nteam-b/pod/batch-2\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := teamsWorld(t)
			out, errOut, err := run(t, w.env(nil), tc.args...)
			if err != nil {
				t.Fatalf("%v: %v", tc.args, err)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" || errOut != "" {
				t.Errorf("%v (-want +got):\n%s\nstderr: %s", tc.args, diff, errOut)
			}
		})
	}
}

func TestUsageJSONAddsUpToStatus(t *testing.T) {
	w := teamsWorld(t)
	out, _, err := run(t, w.env(nil), "usage", "team-b/team-b", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got BudgetUsage
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Kind != "BudgetUsage" || got.APIVersion != "cli.quotagate.io/v1alpha1" || len(got.Pods) != 2 {
		t.Errorf("usage -o json: %s %s with %d pods, want a cli.quotagate.io/v1alpha1 BudgetUsage with 2", got.APIVersion, got.Kind, len(got.Pods))
	}
	total, used := got.Total["requests.cpu"], got.StatusUsed["requests.cpu"]
	if total.Cmp(used) != 0 || total.String() != "4" {
		t.Errorf("usage -o json: total %s, status.used %s; want both 4", total.String(), used.String())
	}
}

func TestUsageBadInput(t *testing.T) {
	w := teamsWorld(t)
	tests := map[string]struct {
		args []string
		want string
	}{
		"a resource the budget does not limit": {[]string{"usage", "team-b/team-b", "--sort-by", "memory"},
			`--sort-by "memory": Budget team-b/team-b does not limit it; sort by one of: name, requests.cpu`},
		"a budget that does not exist": {[]string{"usage", "team-b/nope"}, `reading Budget team-b/nope: budgets.quotagate.io "nope" not found`},
		"no budget":                    {[]string{"usage"}, "accepts 1 arg(s), received 0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, _, err := run(t, w.env(nil), tc.args...)
			if err == nil || err.Error() != tc.want || out != "" {
				t.Errorf("%v: error %v, output %q; want error %q", tc.args, err, out, tc.want)
			}
		})
	}
}
