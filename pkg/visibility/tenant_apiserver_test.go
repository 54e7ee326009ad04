package visibility

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/test/localcluster"
)

// TestTenantSeesNoOtherNamespacesPods: a real admission core behind a real
// kube-apiserver's aggregation layer. A team-a pod waits in StrictFIFO ClusterBudget ml
// behind team-b's secret-project-x-trainer; a tenant with view in team-a reads where
// its pod waits and its Budget's queue, and learns its position, the budget that
// blocks it and when its pod is estimated to start, never team-b's pod or namespace
// (docs/guarantees.md, "Tenants see only their own").
func TestTenantSeesNoOtherNamespacesPods(t *testing.T) {
	dir := t.TempDir()
	cluster := localcluster.StartForTest(t, localcluster.Options{Nodes: 1})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	now := time.Now()
	core := quota.NewAdmissionQueue()
	for _, ns := range []string{"team-a", "team-b"} {
		core.SetNamespace(ns, map[string]string{v1alpha1.EnabledLabel: "true"})
	}
	budgets := []quota.Budget{
		{Key: quota.BudgetKey{Name: "ml"}, Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Strategy: v1alpha1.StrictFIFO, NamespaceSelector: labels.Everything()},
		{Key: quota.BudgetKey{Namespace: "team-a", Name: "quota"}, Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}},
	}
	for _, b := range budgets {
		core.UpsertBudget(b)
	}
	// The estimator's world: the same pods, each declaring how long it runs.
	world := estimate.NewWorldBuilder(now, estimate.NewLearner(0), map[string]map[string]string{
		"team-a": {v1alpha1.EnabledLabel: "true"}, "team-b": {v1alpha1.EnabledLabel: "true"},
	}, budgets, nil)
	pod := func(ns, name, cpu string, prio int32, gated bool, age, runs time.Duration) {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name), CreationTimestamp: metav1.NewTime(now.Add(-age)),
				Annotations: map[string]string{v1alpha1.ExpectedDurationAnnotation: runs.String()}},
			Spec: corev1.PodSpec{Priority: ptr.To(prio), Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		}
		if gated {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1alpha1.SchedulingGate}}
		} else {
			p.Status.StartTime = ptr.To(metav1.NewTime(now.Add(-age)))
		}
		view, facts := quota.NewPod(p, v1alpha1.SchedulingGate, now), estimate.FactsOf(p)
		core.UpsertPod(view)
		world.Add(view, &facts)
	}
	// batch ends in 7 minutes; the trainer, ahead in StrictFIFO, runs 20 more.
	pod("team-b", "batch", "1", 0, false, 3*time.Minute, 10*time.Minute)
	pod("team-b", "secret-project-x-trainer", "2", 100, true, 2*time.Minute, 20*time.Minute)
	pod("team-a", "train", "1", 0, true, time.Minute, 5*time.Minute)
	if adm := core.Admit(); len(adm) != 0 {
		t.Fatalf("admitted %v behind a StrictFIFO head that does not fit", adm)
	}
	estimates := fakeEstimates{}
	for _, s := range estimate.Simulate(world.World(), estimate.Options{}) {
		estimates[s.Pod.UID] = s
	}
	wantStart := now.Add(27 * time.Minute).Round(time.Second) // as the API rounds it to metav1.Time

	port := testbed.FreePort(t)
	srv, err := New(Options{BindAddress: net.IPv4(127, 0, 0, 1), Port: port, CertDir: filepath.Join(dir, "certs"), Kubeconfig: cluster.KubeconfigPath(),
		Estimates: estimates}, core.Reader(), leading(true), nil)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := servingCert(t, dir)
	go func() { _ = srv.Start(ctx) }()
	cfg := cluster.Config()
	register(ctx, t, cfg, port, caPEM)
	roles(ctx, t, kubernetes.NewForConfigOrDie(cfg))
	tenant := as(cfg, "system:serviceaccount:team-a:tenant", "system:serviceaccounts", "system:serviceaccounts:team-a")

	const want = "behind a pod of higher priority in another namespace in StrictFIFO ClusterBudget ml; position 2 of 2"
	read := func(path ...string) string {
		t.Helper()
		var body []byte
		var getErr error
		// kube-controller-manager aggregates the queue-viewer role into view shortly
		// after it is created; until then the tenant is refused.
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			body, getErr = tenant.CoreV1().RESTClient().Get().AbsPath(path...).DoRaw(ctx)
			return getErr == nil, nil
		})
		if err != nil {
			t.Fatalf("the team-a tenant reads %s: %v", strings.Join(path, "/"), getErr)
		}
		return string(body)
	}
	status := read(GroupVersionPath, "namespaces", "team-a", "pendingpods", "train")
	queue := read(GroupVersionPath, "namespaces", "team-a", "budgets", "quota", "pendingpods")
	var st visv1.PendingPodStatus
	var list visv1.PendingPodList
	if err := json.Unmarshal([]byte(status), &st); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(queue), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("team-a/quota's queue holds %d pods, want train: %s", len(list.Items), queue)
	}
	for what, e := range map[string]*visv1.EstimatedStart{"train's status": st.EstimatedStart, "team-a/quota's queue": list.Items[0].EstimatedStart} {
		if e == nil || e.Median == nil || !e.Median.Time.Equal(wantStart) || e.Ends != 2 {
			t.Errorf("%s: estimated start %+v, want %s after 2 pod ends (batch's, then the trainer's)", what, e, wantStart)
		}
	}
	for what, body := range map[string]string{"train's status": status, "team-a/quota's queue": queue} {
		if !strings.Contains(body, want) {
			t.Errorf("%s does not say %q: %s", what, want, body)
		}
		for _, secret := range []string{"secret-project-x-trainer", "team-b"} {
			if strings.Contains(body, secret) {
				t.Errorf("%s shows the team-a tenant %q: %s", what, secret, body)
			}
		}
	}
}
