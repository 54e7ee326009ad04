package app

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

func TestQueue(t *testing.T) {
	w := teamsWorld(t)
	tests := map[string]struct {
		args []string
		want string
	}{
		"namespace/name": {
			args: []string{"queue", "team-a/team-a"},
			want: `Budget team-a/team-a: Open, BestEffortFIFO, 3 gated
POSITION   POD              PRIORITY   REQUESTS   WAITING   QUEUE          ETA   REASON
1          team-a/huge      0          cpu=6      9m30s     parked         -     requests.cpu: 6 requested, more than the 4 hard of Budget team-a/team-a: it can never fit
2          team-a/train-1   0          cpu=2      8m        inadmissible   -     requests.cpu: 2 requested, 0 free in Budget team-a/team-a; position 2 of 3
3          team-a/train-3   0          cpu=1      6m        inadmissible   -     requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3
`,
		},
		"name in -n namespace": {
			args: []string{"queue", "team-b", "-n", "team-b"},
			want: `Budget team-b/team-b: Open, BestEffortFIFO, 1 gated
POSITION   POD              PRIORITY   REQUESTS   WAITING   QUEUE          ETA   REASON
1          team-b/batch-3   0          cpu=2      8m20s     inadmissible   -     requests.cpu: 2 requested, 0 free in Budget team-b/team-b; position 1 of 1
`,
		},
		"a ClusterBudget holds the pods of both teams": {
			args: []string{"queue", "clusterbudget/org"},
			want: `ClusterBudget org: Open, BestEffortFIFO, 4 gated
POSITION   POD              PRIORITY   REQUESTS   WAITING   QUEUE          ETA   REASON
1          team-a/huge      0          cpu=6      9m30s     parked         -     requests.cpu: 6 requested, more than the 4 hard of Budget team-a/team-a: it can never fit
2          team-b/batch-3   0          cpu=2      8m20s     inadmissible   -     requests.cpu: 2 requested, 0 free in Budget team-b/team-b; position 1 of 1
3          team-a/train-1   0          cpu=2      8m        inadmissible   -     requests.cpu: 2 requested, 0 free in Budget team-a/team-a; position 2 of 3
4          team-a/train-3   0          cpu=1      6m        inadmissible   -     requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3
`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := run(t, w.env(nil), tc.args...)
			if err != nil {
				t.Fatalf("queue: %v\n%s", err, errOut)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

// -o json prints the visibility API's PendingPodList, read page by page from the API,
// with the core's order, positions and reasons.
func TestQueueJSON(t *testing.T) {
	w := teamsWorld(t)
	out, _, err := run(t, w.queuesEnv(t, nil), "queue", "team-a/team-a", "-o", "json")
	if err != nil {
		t.Fatalf("queue: %v", err)
	}
	var got visv1.PendingPodList
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("decoding the output: %v\n%s", err, out)
	}
	key := quota.BudgetKey{Namespace: "team-a", Name: "team-a"}
	var want []string
	for _, b := range w.core.Reader().Snapshot().Budgets {
		if b.Budget == key {
			for _, p := range b.Pods {
				want = append(want, fmt.Sprintf("%d %s %s %s %s %s", p.Position, p.Pod, p.Pod.UID, p.Queue, p.Reason.Code, p.Reason.Message))
			}
		}
	}
	var pods []string
	for _, p := range got.Items {
		pods = append(pods, fmt.Sprintf("%d %s/%s %s %s %s %s", p.Position, p.Namespace, p.Name, p.UID, p.Queue, p.ReasonCode, p.Reason))
	}
	if diff := cmp.Diff(want, pods); diff != "" {
		t.Errorf("queue -o json pods (-core +plugin):\n%s", diff)
	}
	head := fmt.Sprintf("%s %s %s/%s %s %s %s total=%d offset=%d", got.APIVersion, got.Kind, got.Namespace, got.Name, got.BudgetKind, got.State, got.Strategy, got.Total, got.Offset)
	if diff := cmp.Diff("visibility.quotagate.io/v1alpha1 PendingPodList team-a/team-a Budget Open BestEffortFIFO total=3 offset=0", head); diff != "" {
		t.Errorf("queue -o json list (-want +got):\n%s", diff)
	}
}

func TestQueueErrors(t *testing.T) {
	w := teamsWorld(t)
	tests := map[string]struct {
		args    []string
		src     SnapshotSource
		wantErr string
	}{
		"unknown budget": {
			args:    []string{"queue", "team-a/nope"},
			wantErr: "the manager has no queue for Budget team-a/nope: no such budget, or the manager has not seen it yet",
		},
		"manager unreachable": {
			args:    []string{"queue", "team-a/team-a"},
			src:     failingSource{},
			wantErr: "cannot read the queue snapshot from the test manager: connection refused",
		},
		"bad output format": {
			args: []string{"queue", "team-a/team-a", "-o", "table"},
			wantErr: `unable to match a printer suitable for the output format "table", allowed formats are: ` +
				`go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,kyaml,name,template,templatefile,wide,yaml`,
		},
		"a budget and -A": {
			args:    []string{"queue", "team-a/team-a", "-A"},
			wantErr: "a budget cannot be named with --all-namespaces: give BUDGET or -A, not both",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, _, err := run(t, w.env(tc.src), tc.args...)
			if err == nil {
				t.Fatalf("queue succeeded, want error %q; output:\n%s", tc.wantErr, out)
			}
			if diff := cmp.Diff(tc.wantErr, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}
