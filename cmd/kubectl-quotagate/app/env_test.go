package app

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// t0 is when the test world begins; now is when the plugin runs in it.
var (
	t0  = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	now = t0.Add(10 * time.Minute)
)

// makePod builds a gated pod ns/name created at t0 (Created counts from t0), its UID
// ns-name.
func makePod(ns, name string) *podtest.Builder {
	return podtest.New(name).NS(ns).UID(ns+"-"+name).At(t0).Gated().Container("main", "busybox")
}

func budget(ns, name, hard, parent string) *v1alpha1.Budget {
	return &v1alpha1.Budget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.BudgetSpec{Hard: parseList(hard), Parent: parent, State: v1alpha1.StateOpen, QueueingStrategy: v1alpha1.BestEffortFIFO},
	}
}

func clusterBudget(name, hard string, nsSelector *metav1.LabelSelector) *v1alpha1.ClusterBudget {
	return &v1alpha1.ClusterBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ClusterBudgetSpec{
			BudgetSpec:        v1alpha1.BudgetSpec{Hard: parseList(hard), State: v1alpha1.StateOpen, QueueingStrategy: v1alpha1.BestEffortFIFO},
			NamespaceSelector: nsSelector,
		},
	}
}

func namespace(name string, enabled bool) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/metadata.name": name}}}
	if enabled {
		ns.Labels[v1alpha1.EnabledLabel] = "true"
	}
	return ns
}

// parseList reads "requests.cpu=4,pods=10".
func parseList(spec string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for kv := range strings.SplitSeq(spec, ",") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

// world is a cluster as the plugin sees it: API objects in a fake client, and the
// manager's real /debug/queues handler over a real admission core that was fed the
// same objects and ran Admit, so order, positions and reasons come from the core.
type world struct {
	client client.WithWatch
	core   *quota.AdmissionQueue
	server *httptest.Server
	// starts are the estimated starts the snapshot serves, as the manager's estimator
	// gives them; empty unless a test sets some.
	starts fixedEstimates
	// admitted lists the pods the core admitted, in order.
	admitted []string
}

// fixedEstimates are estimated starts by pod UID, as the manager's estimator answers.
type fixedEstimates map[types.UID]estimate.Start

func (f fixedEstimates) EstimatedStart(uid types.UID) (estimate.Start, bool) {
	s, ok := f[uid]
	return s, ok
}

// newWorld feeds the objects to a manager's admission core at t0, admits what fits
// (ungating those pods and annotating them as the manager does) at admitAt, and
// writes every budget's status from the core.
func newWorld(t *testing.T, admitAt time.Time, namespaces []*corev1.Namespace, budgets []*v1alpha1.Budget, clusterBudgets []*v1alpha1.ClusterBudget, pods []*corev1.Pod) *world {
	t.Helper()
	return newFlavoredWorld(t, nil, admitAt, namespaces, budgets, clusterBudgets, pods)
}

// newFlavoredWorld is newWorld with Flavors, which the budgets' spec.flavors name; a pod
// admitted on a flavor gets its node labels, as the ungate patch adds them.
func newFlavoredWorld(t *testing.T, flavors []*v1alpha1.Flavor, admitAt time.Time, namespaces []*corev1.Namespace, budgets []*v1alpha1.Budget, clusterBudgets []*v1alpha1.ClusterBudget, pods []*corev1.Pod) *world {
	t.Helper()
	clk := clocktesting.NewFakeClock(admitAt)
	opts := controller.DefaultOptions()
	opts.Clock = clk
	ctl, err := controller.New(opts)
	if err != nil {
		t.Fatalf("controller.New: %v", err)
	}
	core := ctl.Core()
	for _, f := range flavors {
		core.UpsertFlavor(quota.FlavorFromAPI(f))
	}
	for _, ns := range namespaces {
		core.SetNamespace(ns.Name, ns.Labels)
	}
	for _, b := range budgets {
		core.UpsertBudget(quota.BudgetFromAPI(b))
	}
	for _, b := range clusterBudgets {
		core.UpsertBudget(quota.ClusterBudgetFromAPI(b))
	}
	byUID := map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		byUID[p.UID] = p
		core.UpsertPod(quota.NewPod(p, v1alpha1.SchedulingGate, admitAt))
	}
	w := &world{core: core, starts: fixedEstimates{}}
	for _, a := range core.Admit() {
		core.Done(a.Pod.UID, quota.Ungated, "")
		p := byUID[a.Pod.UID]
		p.Spec.SchedulingGates = nil
		if a.Flavor != nil {
			p.Spec.NodeSelector = a.Flavor.NodeLabels
		}
		names := make([]string, len(a.Budgets))
		for i, k := range a.Budgets {
			names[i] = k.String()
		}
		p.Annotations = map[string]string{
			v1alpha1.AdmittedAtAnnotation: admitAt.UTC().Format(time.RFC3339),
			v1alpha1.AdmittedByAnnotation: strings.Join(names, ","),
		}
		if a.Flavor != nil {
			p.Annotations[v1alpha1.FlavorAnnotation] = a.Flavor.Name
		}
		if len(a.Borrowing) > 0 {
			borrowing := make([]string, len(a.Borrowing))
			for i, k := range a.Borrowing {
				borrowing[i] = k.String()
			}
			p.Annotations[v1alpha1.BorrowingAnnotation] = strings.Join(borrowing, ",")
		}
		core.UpsertPod(quota.NewPod(p, v1alpha1.SchedulingGate, admitAt))
		w.admitted = append(w.admitted, a.Pod.String())
	}

	var objs []client.Object
	for _, ns := range namespaces {
		objs = append(objs, ns)
	}
	for _, b := range budgets {
		writeStatus(t, core, quota.BudgetKey{Namespace: b.Namespace, Name: b.Name}, &b.Status)
		objs = append(objs, b)
	}
	for _, b := range clusterBudgets {
		writeStatus(t, core, quota.BudgetKey{Name: b.Name}, &b.Status)
		objs = append(objs, b)
	}
	for _, p := range pods {
		objs = append(objs, p)
	}
	w.client = fake.NewClientBuilder().WithScheme(newScheme()).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.Budget{}, &v1alpha1.ClusterBudget{}).Build()
	w.server = httptest.NewTLSServer(controller.QueuesHandler(ctl.Queues(), w.starts))
	t.Cleanup(w.server.Close)
	return w
}

// writeStatus copies the core's status of a budget into the API status, as the
// manager's status writer does.
func writeStatus(t *testing.T, core *quota.AdmissionQueue, key quota.BudgetKey, status *v1alpha1.BudgetStatus) {
	t.Helper()
	st, ok := core.Reader().Status(key)
	if !ok {
		t.Fatalf("the core has no status for %s", key.Describe())
	}
	status.State, status.Hard, status.Used, status.Pending = st.State, st.Hard, st.Used, st.Pending
	status.AdmittedPods, status.GatedPods = st.AdmittedPods, st.GatedPods
	status.Flavors = nil
	for _, f := range st.Flavors {
		status.Flavors = append(status.Flavors, v1alpha1.FlavorStatus{Name: f.Name, Hard: f.Hard, Used: f.Used, Borrowed: f.Borrowed, Lent: f.Lent})
	}
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: st.StateReason, Message: st.StateMessage}
	if st.State != v1alpha1.StateOpen {
		ready.Status = metav1.ConditionFalse
	}
	if st.Problem != nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, st.Problem.Reason, st.Problem.Message
	}
	meta.SetStatusCondition(&status.Conditions, ready)
}

// env returns the plugin's environment in this world: the fake API, and the snapshot
// from the test server (or from src when it is set).
func (w *world) env(src SnapshotSource) *env {
	return &env{
		client: func() (client.WithWatch, error) { return w.client, nil },
		snapshots: func() (SnapshotSource, error) {
			if src != nil {
				return src, nil
			}
			return newURLSource(w.server.URL, "", "", true)
		},
		now: func() time.Time { return now },
	}
}

// run runs the plugin with args and returns what it wrote to stdout and stderr.
func run(t *testing.T, e *env, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	e.streams.Out, e.streams.ErrOut = &out, &errOut
	var ns string
	e.namespace = func() (string, error) {
		if ns == "" {
			return "default", nil
		}
		return ns, nil
	}
	cmd := newRootCommand(e)
	cmd.PersistentFlags().StringVarP(&ns, "namespace", "n", "", "namespace")
	cmd.SetArgs(args)
	cmd.SetContext(t.Context())
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}
