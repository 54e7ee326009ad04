package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/visibility"
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

func (failingSource) Snapshot(context.Context) (visibility.QueuesSnapshot, error) {
	return visibility.QueuesSnapshot{}, &UnreachableError{Source: "the test manager", Err: errors.New("connection refused")}
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

// A budget that borrows under its parent shows it beside its use, and one that lends
// shows what its siblings use of its hard.
func TestBudgetRowShowsBorrowed(t *testing.T) {
	q := func(s string) resource.Quantity { return resource.MustParse(s) }
	rows := budgetTableRows([]budgetRow{{
		Key: quota.BudgetKey{Namespace: "team-a", Name: "a"}, State: "Open", OldestWait: "-",
		Hard:     corev1.ResourceList{"requests.cpu": q("4"), "pods": q("10")},
		Used:     corev1.ResourceList{"requests.cpu": q("6"), "pods": q("6")},
		Borrowed: corev1.ResourceList{"requests.cpu": q("2")},
	}, {
		Key: quota.BudgetKey{Namespace: "team-b", Name: "b"}, State: "Open", OldestWait: "-",
		Hard: corev1.ResourceList{"requests.cpu": q("4")},
		Used: corev1.ResourceList{"requests.cpu": q("1")},
		Lent: corev1.ResourceList{"requests.cpu": q("2")},
	}})
	var cells []string
	for _, r := range rows {
		cells = append(cells, fmt.Sprint(r.Cells[8]))
	}
	if want := []string{"6/10", "6/4 (2 borrowed)", "1/4 (2 lent)"}; !slices.Equal(cells, want) {
		t.Errorf("USED/HARD cells %q, want %q", cells, want)
	}
}
