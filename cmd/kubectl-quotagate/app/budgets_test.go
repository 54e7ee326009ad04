package app

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/quotagate/quotagate/pkg/quota"
)

func TestBudgets(t *testing.T) {
	w := teamsWorld(t)
	tests := map[string]struct {
		args []string
		want string
	}{
		"all namespaces": {
			args: []string{"budgets", "-A"},
			want: `BUDGET                 STATE   ADMITTED   GATED   OLDEST WAIT   RESOURCE       USED/HARD   USAGE
Budget team-a/team-a   Open    3          3       9m30s         pods           3/10        [███░░░░░░░]
                                                                requests.cpu   4/4         [██████████]
Budget team-b/team-b   Open    2          1       8m20s         requests.cpu   4/4         [██████████]
ClusterBudget org      Open    5          4       9m30s         requests.cpu   8/8         [██████████]
`,
		},
		"one namespace shows the ClusterBudgets above it": {
			args: []string{"budgets", "-n", "team-b"},
			want: `BUDGET                 STATE   ADMITTED   GATED   OLDEST WAIT   RESOURCE       USED/HARD   USAGE
Budget team-b/team-b   Open    2          1       8m20s         requests.cpu   4/4         [██████████]
ClusterBudget org      Open    5          4       9m30s         requests.cpu   8/8         [██████████]
`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := run(t, w.env(nil), tc.args...)
			if err != nil {
				t.Fatalf("budgets: %v\n%s", err, errOut)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if errOut != "" {
				t.Errorf("unexpected notes on stderr:\n%s", errOut)
			}
		})
	}
}

// failingSource is a manager that cannot be reached.
type failingSource struct{}

func (failingSource) Snapshot(context.Context) (quota.Snapshot, error) {
	return quota.Snapshot{}, &UnreachableError{Source: "the test manager", Err: errors.New("connection refused")}
}
func (failingSource) String() string { return "the test manager" }

// Without the manager, budgets still shows everything from the API, and the oldest
// waits come from the gated pods: the same figures as the snapshot gave above.
func TestBudgetsWithoutManager(t *testing.T) {
	w := teamsWorld(t)
	out, errOut, err := run(t, w.env(failingSource{}), "budgets", "-A")
	if err != nil {
		t.Fatalf("budgets: %v", err)
	}
	want := `BUDGET                 STATE   ADMITTED   GATED   OLDEST WAIT   RESOURCE       USED/HARD   USAGE
Budget team-a/team-a   Open    3          3       9m30s         pods           3/10        [███░░░░░░░]
                                                                requests.cpu   4/4         [██████████]
Budget team-b/team-b   Open    2          1       8m20s         requests.cpu   4/4         [██████████]
ClusterBudget org      Open    5          4       9m30s         requests.cpu   8/8         [██████████]
`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	wantNotes := `Note: cannot read the queue snapshot from the test manager: connection refused
Note: oldest waits are computed from the gated pods' creation times
`
	if diff := cmp.Diff(wantNotes, errOut); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

// A manager that refuses the caller is reported with what to do about it.
func TestBudgetsManagerRefuses(t *testing.T) {
	w := teamsWorld(t)
	refusing := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		http.Error(rw, "Authorization denied for user system:serviceaccount:team-a:ci", http.StatusForbidden)
	}))
	t.Cleanup(refusing.Close)
	src, err := newURLSource(refusing.URL, "a-token", "", true)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, w.env(src), "budgets", "-n", "team-b")
	if err != nil {
		t.Fatalf("budgets: %v", err)
	}
	if out == "" {
		t.Errorf("budgets printed nothing without the manager")
	}
	wantNotes := "Note: cannot read the queue snapshot from " + refusing.URL + ": HTTP 403: Authorization denied for user system:serviceaccount:team-a:ci\n" +
		"  " + hintForbidden + "\n" +
		"Note: oldest waits are computed from the gated pods' creation times (for ClusterBudgets, among the pods of namespace team-b only)\n"
	if diff := cmp.Diff(wantNotes, errOut); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}
