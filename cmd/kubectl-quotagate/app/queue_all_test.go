package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// refusing returns the world's API client, refusing to list what the user may not:
// ClusterBudgets, and with budgetsAcrossNamespaces Budgets of every namespace.
func refusing(w *world, budgetsAcrossNamespaces bool) client.WithWatch {
	return interceptor.NewClient(w.client, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			o := (&client.ListOptions{}).ApplyOptions(opts)
			switch list.(type) {
			case *v1alpha1.ClusterBudgetList:
				return apierrors.NewForbidden(schema.GroupResource{Group: "quotagate.io", Resource: "clusterbudgets"}, "",
					errors.New(`User "tenant" cannot list resource "clusterbudgets" in API group "quotagate.io" at the cluster scope`))
			case *v1alpha1.BudgetList:
				if budgetsAcrossNamespaces && o.Namespace == "" {
					return apierrors.NewForbidden(schema.GroupResource{Group: "quotagate.io", Resource: "budgets"}, "",
						errors.New(`User "tenant" cannot list resource "budgets" in API group "quotagate.io" at the cluster scope`))
				}
			}
			return c.List(ctx, list, opts...)
		},
	})
}

// queue without BUDGET shows the queues of the namespace's Budgets, and with -A of every
// Budget and ClusterBudget the user may list, skipping with a note those the user may
// not read.
func TestQueueOfSeveralBudgets(t *testing.T) {
	w := teamsWorld(t)
	teamB, org := quota.BudgetKey{Namespace: "team-b", Name: "team-b"}, quota.BudgetKey{Name: "org"}
	tests := map[string]struct {
		env       *env
		args      []string
		want      string
		wantNotes string
	}{
		"-A as an admin": {
			env:  w.queuesEnv(t, nil),
			args: []string{"queue", "-A"},
			want: `BUDGET                 POSITION   POD              PRIORITY   REQUESTS   WAITING   QUEUE          ETA   REASON
Budget team-a/team-a   1          team-a/huge      0          cpu=6      9m30s     parked         -     requests.cpu: 6 requested, more than the 4 hard of Budget team-a/team-a: it can never fit
Budget team-a/team-a   2          team-a/train-1   0          cpu=2      8m        inadmissible   -     requests.cpu: 2 requested, 0 free in Budget team-a/team-a; position 2 of 3
Budget team-a/team-a   3          team-a/train-3   0          cpu=1      6m        inadmissible   -     requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3
Budget team-b/team-b   1          team-b/batch-3   0          cpu=2      8m20s     inadmissible   -     requests.cpu: 2 requested, 0 free in Budget team-b/team-b; position 1 of 1
ClusterBudget org      1          team-a/huge      0          cpu=6      9m30s     parked         -     requests.cpu: 6 requested, more than the 4 hard of Budget team-a/team-a: it can never fit
ClusterBudget org      2          team-b/batch-3   0          cpu=2      8m20s     inadmissible   -     requests.cpu: 2 requested, 0 free in Budget team-b/team-b; position 1 of 1
ClusterBudget org      3          team-a/train-1   0          cpu=2      8m        inadmissible   -     requests.cpu: 2 requested, 0 free in Budget team-a/team-a; position 2 of 3
ClusterBudget org      4          team-a/train-3   0          cpu=1      6m        inadmissible   -     requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3
`,
		},
		"no BUDGET: the namespace's Budgets": {
			env:  w.queuesEnv(t, nil),
			args: []string{"queue", "-n", "team-b", "--no-headers"},
			want: "Budget team-b/team-b   1     team-b/batch-3   0     cpu=2   8m20s   inadmissible   -     requests.cpu: 2 requested, 0 free in Budget team-b/team-b; position 1 of 1\n",
		},
		"-A skips the queues the user may not read": {
			env:  w.queuesEnv(t, nil, teamB, org),
			args: []string{"queue", "-A", "-o", "name"},
			want: "team-a/pod/huge\nteam-a/pod/train-1\nteam-a/pod/train-3\n",
			wantNotes: `Note: skipped Budget team-b/team-b: you may not see Budget team-b/team-b's queue: it needs get on budgets/pendingpods in visibility.quotagate.io in namespace team-b (the view role has it when the chart aggregates it): budgets.visibility.quotagate.io "team-b" is forbidden: User "tenant" cannot get resource "budgets/pendingpods" in API group "visibility.quotagate.io"
Note: skipped ClusterBudget org: you may not see ClusterBudget org's queue: it needs get on clusterbudgets/pendingpods in visibility.quotagate.io (the chart's <release>-clusterqueue-viewer ClusterRole): clusterbudgets.visibility.quotagate.io "org" is forbidden: User "tenant" cannot get resource "clusterbudgets/pendingpods" in API group "visibility.quotagate.io"
`,
		},
		"-A without the right to list ClusterBudgets": {
			env:       w.queuesEnv(t, refusing(w, false)),
			args:      []string{"queue", "-A", "-o", "name"},
			want:      "team-a/pod/huge\nteam-a/pod/train-1\nteam-a/pod/train-3\nteam-b/pod/batch-3\n",
			wantNotes: "Note: ClusterBudgets' queues are not shown: you may not list ClusterBudgets\n",
		},
		"-o name lists each pod once": {
			env:  w.queuesEnv(t, nil),
			args: []string{"queue", "-A", "-o", "name"},
			want: "team-a/pod/huge\nteam-a/pod/train-1\nteam-a/pod/train-3\nteam-b/pod/batch-3\n",
		},
		"a namespace without budgets": {
			env:       w.queuesEnv(t, nil),
			args:      []string{"queue", "-n", "legacy"},
			wantNotes: "No budgets found.\n",
		},
		"from the manager's snapshot (--manager-url)": {
			env:  w.env(nil),
			args: []string{"queue", "-n", "team-a", "-o", "jsonpath={range .items[*]}{.metadata.name}: {.total} gated{\"\\n\"}{end}"},
			want: "team-a: 3 gated\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := run(t, tc.env, tc.args...)
			if err != nil {
				t.Fatalf("queue: %v\n%s", err, errOut)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNotes, errOut); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}

// -A -o json prints a v1 List of the queues' PendingPodLists.
func TestQueueAllJSON(t *testing.T) {
	w := teamsWorld(t)
	out, _, err := run(t, w.queuesEnv(t, nil), "queue", "-A", "-o", "json")
	if err != nil {
		t.Fatalf("queue: %v", err)
	}
	var list unstructured.UnstructuredList
	if err := json.Unmarshal([]byte(out), &list.Object); err != nil {
		t.Fatalf("decoding: %v\n%s", err, out)
	}
	var got []string
	items, _, _ := unstructured.NestedSlice(list.Object, "items")
	for _, it := range items {
		u := unstructured.Unstructured{Object: it.(map[string]any)}
		pods, _, _ := unstructured.NestedSlice(u.Object, "items")
		got = append(got, fmt.Sprintf("%s %s %s/%s %v %d", u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName(), u.Object["total"], len(pods)))
	}
	want := []string{
		"visibility.quotagate.io/v1alpha1 PendingPodList team-a/team-a 3 3",
		"visibility.quotagate.io/v1alpha1 PendingPodList team-b/team-b 1 1",
		"visibility.quotagate.io/v1alpha1 PendingPodList /org 4 4",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("queue -A -o json items (-want +got):\n%s", diff)
	}
	if list.Object["apiVersion"] != "v1" || list.Object["kind"] != "List" {
		t.Errorf("queue -A -o json: apiVersion %v, kind %v; want v1 List", list.Object["apiVersion"], list.Object["kind"])
	}
}

func TestQueueAllRefused(t *testing.T) {
	w := teamsWorld(t)
	_, _, err := run(t, w.queuesEnv(t, refusing(w, true)), "queue", "-A")
	want := `listing budgets in every namespace (-A needs list on budgets.quotagate.io cluster-wide; without -A, queue shows the queues of one namespace's budgets): budgets.quotagate.io is forbidden: User "tenant" cannot list resource "budgets" in API group "quotagate.io" at the cluster scope`
	if err == nil || err.Error() != want {
		t.Errorf("queue -A without the right to list budgets: got %v, want %q", err, want)
	}
}
