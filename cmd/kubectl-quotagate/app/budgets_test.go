package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"

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

// defaultInstall is the plugin as a user runs it on a default install: no --manager-*
// flag, so no snapshot (the chart's manager serves it over HTTPS to bearer tokens only,
// which the API server's proxy does not pass on).
func (w *world) defaultInstall() *env {
	e := w.env(nil)
	e.snapshots = func() (SnapshotSource, error) { return nil, nil }
	return e
}

// On a default install budgets reads the oldest waits from the gated pods, with the
// manager's coverage rules: the same figures as the snapshot gave above, and not a word
// on stderr.
func TestBudgetsOnADefaultInstall(t *testing.T) {
	w := teamsWorld(t)
	out, errOut, err := run(t, w.defaultInstall(), "budgets", "-A")
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
	if errOut != "" {
		t.Errorf("budgets on a default install wrote to stderr:\n%s", errOut)
	}
}

// A manager the user names (--manager-*) that cannot be read gets one note, which
// says so and where the figures come from instead.
func TestBudgetsWithoutManager(t *testing.T) {
	w := teamsWorld(t)
	out, errOut, err := run(t, w.env(failingSource{}), "budgets", "-A")
	if err != nil {
		t.Fatalf("budgets: %v", err)
	}
	if !strings.Contains(out, "9m30s") {
		t.Errorf("budgets without the manager lost the oldest waits:\n%s", out)
	}
	wantNotes := "Note: cannot read the queue snapshot from the test manager: connection refused\n" +
		"  the oldest waits are computed from the gated pods' creation times instead\n"
	if diff := cmp.Diff(wantNotes, errOut); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

// A manager that refuses the caller is reported with what to do about it: the role the
// chart creates for /debug/queues.
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
		"  the caller needs get on the non-resource URL /debug/queues (bind the chart's <release>-debug-queues-reader ClusterRole; the metrics reader allows /metrics only)\n" +
		"  the oldest waits are computed from the gated pods' creation times instead\n"
	if diff := cmp.Diff(wantNotes, errOut); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

// The role the hint names is the one that grants get on /debug/queues, in config/rbac
// and (prefixed by the release) in the chart.
func TestForbiddenHintNamesTheDebugQueuesRole(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	role := readClusterRole(t, filepath.Join(root, "config", "rbac", "debug_queues_role.yaml"))
	grants := slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.NonResourceURLs, debugQueuesPath) && slices.Contains(r.Verbs, "get")
	})
	if !grants {
		t.Fatalf("ClusterRole %s does not grant get on %s: %+v", role.Name, debugQueuesPath, role.Rules)
	}
	if want := "<release>-" + strings.TrimPrefix(role.Name, "quotagate-"); !strings.Contains(hintForbidden, want) {
		t.Errorf("the hint %q does not name %s, the role that grants %s", hintForbidden, want, debugQueuesPath)
	}
	chart, err := os.ReadFile(filepath.Join(root, "charts", "quotagate", "templates", "debug-queues-rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(chart), `{{ include "quotagate.fullname" . }}-debug-queues-reader`) {
		t.Errorf("the chart has no <release>-debug-queues-reader ClusterRole:\n%s", chart)
	}
}

// A tenant may not list ClusterBudgets by default: the table says nothing about them,
// unless one of the tenant's Budgets names a parent, which then limits its pods unseen.
func TestBudgetsOfATenantWhoMayNotListClusterBudgets(t *testing.T) {
	w := teamsWorld(t)
	e := w.defaultInstall()
	e.client = func() (client.WithWatch, error) { return refusing(w, true), nil }
	_, errOut, err := run(t, e, "budgets", "-n", "team-a")
	if err != nil {
		t.Fatalf("budgets: %v", err)
	}
	want := "Note: ClusterBudget org, the parent of Budget team-a/team-a, is not shown: you may not list ClusterBudgets\n"
	if diff := cmp.Diff(want, errOut); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}

	orphans := newWorld(t, t0.Add(5*time.Minute), []*corev1.Namespace{namespace("team-a", true)},
		[]*v1alpha1.Budget{budget("team-a", "team-a", "requests.cpu=4", "")}, nil,
		[]*corev1.Pod{makePod("team-a", "train-1").Req("cpu=2").Created(120).Obj()})
	e = orphans.defaultInstall()
	e.client = func() (client.WithWatch, error) { return refusing(orphans, true), nil }
	out, errOut, err := run(t, e, "budgets", "-n", "team-a")
	if err != nil || errOut != "" || !strings.Contains(out, "Budget team-a/team-a") {
		t.Errorf("budgets of a Budget without parent, as a tenant: %v, stdout:\n%s\nstderr:\n%s", err, out, errOut)
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
