package app

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

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
POSITION   POD              PRIORITY   REQUESTS   WAITING   QUEUE          REASON
1          team-a/huge      0          cpu=6      9m30s     parked         requests.cpu: 6 requested, more than the 4 hard of Budget team-a/team-a: it can never fit
2          team-a/train-1   0          cpu=2      8m        inadmissible   requests.cpu: 2 requested, 0 free in Budget team-a/team-a; position 2 of 3
3          team-a/train-3   0          cpu=1      6m        inadmissible   requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3
`,
		},
		"name in -n namespace": {
			args: []string{"queue", "team-b", "-n", "team-b"},
			want: `Budget team-b/team-b: Open, BestEffortFIFO, 1 gated
POSITION   POD              PRIORITY   REQUESTS   WAITING   QUEUE          REASON
1          team-b/batch-3   0          cpu=2      8m20s     inadmissible   requests.cpu: 2 requested, 0 free in Budget team-b/team-b; position 1 of 1
`,
		},
		"a ClusterBudget holds the pods of both teams": {
			args: []string{"queue", "clusterbudget/org"},
			want: `ClusterBudget org: Open, BestEffortFIFO, 4 gated
POSITION   POD              PRIORITY   REQUESTS   WAITING   QUEUE          REASON
1          team-a/huge      0          cpu=6      9m30s     parked         requests.cpu: 6 requested, more than the 4 hard of Budget team-a/team-a: it can never fit
2          team-b/batch-3   0          cpu=2      8m20s     inadmissible   requests.cpu: 2 requested, 0 free in Budget team-b/team-b; position 1 of 1
3          team-a/train-1   0          cpu=2      8m        inadmissible   requests.cpu: 2 requested, 0 free in Budget team-a/team-a; position 2 of 3
4          team-a/train-3   0          cpu=1      6m        inadmissible   requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3
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

// -o json prints the budget's queue exactly as the manager's snapshot has it.
func TestQueueJSON(t *testing.T) {
	w := teamsWorld(t)
	out, _, err := run(t, w.env(nil), "queue", "team-b/team-b", "-o", "json")
	if err != nil {
		t.Fatalf("queue: %v", err)
	}
	var got quota.BudgetQueue
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("decoding the output: %v\n%s", err, out)
	}
	var want quota.BudgetQueue
	for _, b := range w.core.Snapshot().Budgets {
		if b.Budget == (quota.BudgetKey{Namespace: "team-b", Name: "team-b"}) {
			want = b
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("queue -o json (-want +got):\n%s", diff)
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
			args:    []string{"queue", "team-a/team-a", "-o", "yaml"},
			wantErr: `unsupported output format "yaml": use -o json, or nothing for a table`,
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
