package visibility

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// worldSimulator is the manager's SimulatePods on a fixed world: the simulated pods
// are added, gated and created at now, to a fresh copy of it.
type worldSimulator struct {
	now      time.Time
	world    func() *estimate.WorldBuilder
	noStarts string
}

func (s worldSimulator) SimulatePods(_ context.Context, namespace string, tmpl *corev1.PodTemplateSpec, count int) (estimate.WhatIf, error) {
	b := s.world()
	for i := range count {
		p := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
		// UIDs ordered as the pods are listed, as the manager's (controller.SimulatePods).
		p.Namespace, p.Name, p.UID = namespace, fmt.Sprintf("simulated-%d", i), types.UID(fmt.Sprintf("simulated-%04d", i))
		p.CreationTimestamp = metav1.NewTime(s.now)
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1alpha1.SchedulingGate}}
		view, facts := quota.NewPod(p, v1alpha1.SchedulingGate, s.now), estimate.FactsOf(p)
		b.Add(view, &facts)
	}
	return estimate.Suppose(b.World(), estimate.Options{}, count, s.noStarts), nil
}

// tenantWorld is TestTenantSeesNoOtherNamespacesPods' world: StrictFIFO ClusterBudget
// ml (2 CPUs) runs team-b's batch (ends in 7 minutes) and holds team-b's
// secret-project-x-trainer (priority 100, 2 CPUs, 20 minutes) then team-a's train
// (1 CPU, 5 minutes); team-a's Budget quota has 10 CPUs.
func tenantWorld(now time.Time) func() *estimate.WorldBuilder {
	return func() *estimate.WorldBuilder {
		budgets := []quota.Budget{
			{Key: quota.BudgetKey{Name: "ml"}, Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Strategy: v1alpha1.StrictFIFO, NamespaceSelector: labels.Everything()},
			{Key: quota.BudgetKey{Namespace: "team-a", Name: "quota"}, Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}},
		}
		b := estimate.NewWorldBuilder(now, estimate.NewLearner(0), map[string]map[string]string{
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
			b.Add(view, &facts)
		}
		pod("team-b", "batch", "1", 0, false, 3*time.Minute, 10*time.Minute)
		pod("team-b", "secret-project-x-trainer", "2", 100, true, 2*time.Minute, 20*time.Minute)
		pod("team-a", "train", "1", 0, true, time.Minute, 5*time.Minute)
		return b
	}
}

// simulation is a PodSimulation of count pods of 1 CPU that declare 1 minute.
func simulation(count int32) *visv1.PodSimulation {
	return &visv1.PodSimulation{
		TypeMeta: metav1.TypeMeta{APIVersion: visv1.GroupVersion.String(), Kind: visv1.KindPodSimulation},
		Spec: visv1.PodSimulationSpec{Count: count, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.ExpectedDurationAnnotation: "1m"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/train",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		}},
	}
}

// postSimulation creates body (a PodSimulation, or raw bytes) in namespace and returns
// the raw answer; its error carries the Status the server answered.
func postSimulation(ctx context.Context, cs kubernetes.Interface, namespace string, body any, headers ...string) ([]byte, error) {
	data, ok := body.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	req := cs.CoreV1().RESTClient().Post().AbsPath(PodSimulationsPath(namespace)).SetHeader("Content-Type", "application/json").Body(data)
	for i := 0; i+1 < len(headers); i += 2 {
		req = req.SetHeader(headers[i], headers[i+1])
	}
	res := req.Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err
	}
	return res.Raw()
}

// TestPodSimulationsOnRealAPIServer: the what-if through a real kube-apiserver's
// aggregation layer. A team-a user with edit (who may create pods) learns, for two
// pods of a Job-like template, the budgets that would cover them, their places behind
// the pods already waiting, why they would wait and when they would start, and no
// other namespace's pod or namespace. A user with view only (pendingpods, not create
// pods), a user who may create podsimulations but not pods, a user of team-b, a user
// who pretends to be a forwarding replica, a
// malformed body, a count above the bound and a GET are refused, each with its
// status code.
func TestPodSimulationsOnRealAPIServer(t *testing.T) {
	dir := t.TempDir()
	cluster := localcluster.StartForTest(t, localcluster.Options{Nodes: 1})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	now := time.Now()
	port := testbed.FreePort(t)
	srv, err := New(Options{BindAddress: net.IPv4(127, 0, 0, 1), Port: port, CertDir: filepath.Join(dir, "certs"), Kubeconfig: cluster.KubeconfigPath(),
		Simulator: worldSimulator{now: now, world: tenantWorld(now)}}, quota.NewAdmissionQueue().Reader(), leading(true), nil)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := servingCert(t, dir)
	go func() { _ = srv.Start(ctx) }()
	cfg := cluster.Config()
	register(ctx, t, cfg, port, caPEM)
	admin := kubernetes.NewForConfigOrDie(cfg)
	roles(ctx, t, admin)
	for _, b := range []struct{ ns, sa, role string }{{"team-a", "editor", "edit"}, {"team-b", "editor", "edit"}} {
		bind := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: b.ns, Name: b.sa + "-" + b.role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: b.ns, Name: b.sa}},
		}
		if _, err := admin.RbacV1().RoleBindings(b.ns).Create(ctx, bind, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A user granted podsimulations alone, not pods: the handler's own check refuses it.
	only := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "simulations-only"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{visv1.GroupName}, Resources: []string{visv1.ResourcePodSimulations}, Verbs: []string{"create"}}},
	}
	if _, err := admin.RbacV1().Roles("team-a").Create(ctx, only, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	onlyBinding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "simulator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: only.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "team-a", Name: "simulator"}},
	}
	if _, err := admin.RbacV1().RoleBindings("team-a").Create(ctx, onlyBinding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := func(ns, name string) kubernetes.Interface {
		return as(cfg, "system:serviceaccount:"+ns+":"+name, "system:serviceaccounts", "system:serviceaccounts:"+ns)
	}
	editor, viewer, other, simulator := sa("team-a", "editor"), sa("team-a", "tenant"), sa("team-b", "editor"), sa("team-a", "simulator")

	// kube-controller-manager aggregates the pod-simulator role into edit shortly after
	// it is created; until then the editor is refused.
	var body []byte
	var postErr error
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		body, postErr = postSimulation(ctx, editor, "team-a", simulation(2))
		return postErr == nil, nil
	})
	if err != nil {
		t.Fatalf("a team-a editor simulates two pods: %v", postErr)
	}
	var sim visv1.PodSimulation
	if err := json.Unmarshal(body, &sim); err != nil {
		t.Fatal(err)
	}
	type pod struct {
		Name, Code string
		Places     []string
		Start      time.Duration // median, after now
	}
	var got []pod
	for _, p := range sim.Status.Pods {
		g := pod{Name: p.Name, Code: p.ReasonCode}
		for _, b := range p.Budgets {
			g.Places = append(g.Places, fmt.Sprintf("%s %s/%s %d/%d", b.BudgetKind, b.Namespace, b.Name, b.Position, b.Total))
		}
		if e := p.EstimatedStart; e != nil && e.Median != nil {
			g.Start = e.Median.Sub(now.Truncate(time.Second)).Round(time.Minute)
		}
		got = append(got, g)
	}
	// The trainer starts when batch ends (7m) and runs 20; then train and the first
	// simulated pod fill ml's 2 CPUs, and the second follows the first's minute.
	want := []pod{
		{Name: "simulated-0", Code: string(quota.CodeBehindHead), Places: []string{"Budget team-a/quota 2/3", "ClusterBudget /ml 3/4"}, Start: 27 * time.Minute},
		{Name: "simulated-1", Code: string(quota.CodeBehindHead), Places: []string{"Budget team-a/quota 3/3", "ClusterBudget /ml 4/4"}, Start: 28 * time.Minute},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the simulation (-want +got):\n%s\n%s", diff, body)
	}
	const reason = "behind a pod of higher priority in another namespace in StrictFIFO ClusterBudget ml; position 3 of 4"
	if sim.Kind != visv1.KindPodSimulation || sim.Namespace != "team-a" || !strings.Contains(sim.Status.Pods[0].Reason, reason) {
		t.Errorf("the answer: kind %q, namespace %q, reason %q, want one with %q", sim.Kind, sim.Namespace, sim.Status.Pods[0].Reason, reason)
	}
	for _, secret := range []string{"secret-project-x-trainer", "team-b", "batch"} {
		if strings.Contains(string(body), secret) {
			t.Errorf("the simulation shows the team-a editor %q: %s", secret, body)
		}
	}

	forwarded := func(ctx context.Context) error {
		_, err := postSimulation(ctx, editor, "team-a", simulation(1), forwardedHeader, "1")
		return err
	}
	for what, tc := range map[string]struct {
		call    func(context.Context) error
		check   func(error) bool
		message string
	}{
		"a team-a user with view only (may read pendingpods, may not create pods)": {
			call: func(ctx context.Context) error {
				_, err := postSimulation(ctx, viewer, "team-a", simulation(1))
				return err
			},
			check: apierrors.IsForbidden,
		},
		"a team-a user who may create podsimulations but not pods": {
			call: func(ctx context.Context) error {
				_, err := postSimulation(ctx, simulator, "team-a", simulation(1))
				return err
			},
			check:   apierrors.IsForbidden,
			message: `may not create pods in namespace "team-a"`,
		},
		"a team-b editor in team-a": {
			call: func(ctx context.Context) error {
				_, err := postSimulation(ctx, other, "team-a", simulation(1))
				return err
			},
			check: apierrors.IsForbidden,
		},
		"a team-a editor who sets the forwarded header": {call: forwarded, check: apierrors.IsForbidden, message: "only the manager's replicas"},
		"a malformed body": {
			call: func(ctx context.Context) error {
				_, err := postSimulation(ctx, editor, "team-a", []byte(`{"spec": {"count": "three"}}`))
				return err
			},
			check:   apierrors.IsBadRequest,
			message: "not a PodSimulation",
		},
		"a template without containers": {
			call: func(ctx context.Context) error {
				s := simulation(1)
				s.Spec.Template.Spec.Containers = nil
				_, err := postSimulation(ctx, editor, "team-a", s)
				return err
			},
			check: apierrors.IsBadRequest, message: "containers is empty",
		},
		"more pods than the bound": {
			call: func(ctx context.Context) error {
				_, err := postSimulation(ctx, editor, "team-a", simulation(visv1.MaxSimulatedPods+1))
				return err
			},
			check:   apierrors.IsInvalid,
			message: "a simulation of 1001 pods exceeds the limit of 1000 pods (--simulation-max-pods)",
		},
		"a GET by the cluster's admin": {
			call: func(ctx context.Context) error {
				return admin.CoreV1().RESTClient().Get().AbsPath(PodSimulationsPath("team-a")).Do(ctx).Error()
			},
			check:   apierrors.IsMethodNotSupported,
			message: "created only",
		},
	} {
		err := tc.call(ctx)
		if !tc.check(err) || !strings.Contains(fmt.Sprint(err), tc.message) {
			t.Errorf("%s: got %v, want the status code and %q", what, err, tc.message)
		}
	}
}
