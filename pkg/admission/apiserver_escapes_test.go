package admission_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/admission"
	"github.com/quotagate/quotagate/pkg/gates"
)

// holdGate keeps a pod unscheduled whatever happens to the quotagate gate.
const holdGate = "example.com/hold"

// testEscapes tries every pod shape the webhook used to skip for anyone, as a
// tenant with the built-in edit ClusterRole in the opted-in namespace, and
// the same shapes from the identities that legitimately create them. A real
// DaemonSet of the tenant's gets gated pods, unless an administrator exempted
// it by name.
func testEscapes(t *testing.T, e *env) {
	ctx := t.Context()
	tenant := e.tenantClient(t)
	tenantUser := "system:serviceaccount:" + e.gated + ":tenant"
	nodes, err := e.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("listing nodes: %v (%d nodes)", err, len(nodes.Items))
	}
	nodeName := nodes.Items[0].Name

	t.Run("tenant's pod with a DaemonSet controller reference is gated", func(t *testing.T) {
		pod := podtest.New("fake-daemon").Obj()
		pod.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "DaemonSet", Name: "no-such-daemonset", UID: "0c2b6ad3-4f53-4c55-8d8b-1d0c3f0a1e2d",
			Controller: ptr.To(true),
		}}
		got, err := tenant.CoreV1().Pods(e.gated).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod: %v", err)
		}
		if diff := cmp.Diff([]string{v1alpha1.SchedulingGate}, gateNames(got)); diff != "" {
			t.Errorf("scheduling gates (-want +got):\n%s", diff)
		}
	})

	t.Run("tenant's mirror-annotated pod is gated, then refused by the API server", func(t *testing.T) {
		// The API server's own validation refuses a mirror pod without
		// spec.nodeName, but only after the webhook has been called and gated
		// it: the pod never exists ungated.
		// Only the webhook counts what it gates; the policy leaves no trace.
		before := webhookCount(t, "quotagate_webhook_requests_total", "gated")
		pod := podtest.New("fake-mirror").Obj()
		pod.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "fake"}
		_, err := tenant.CoreV1().Pods(e.gated).Create(ctx, pod, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "must set spec.nodeName if mirror pod annotation is set") {
			t.Fatalf("create = %v, want 422 for the mirror annotation without spec.nodeName", err)
		}
		if got := webhookCount(t, "quotagate_webhook_requests_total", "gated") - before; e.mode == modeWebhook && got != 1 {
			t.Errorf("the webhook gated %v pods during the create, want 1", got)
		}
	})

	wantRefusal := []string{e.refusalPrefix(),
		"spec.nodeName (" + nodeName + ") may only be set on a new pod by a node", "not by " + tenantUser,
		"leave spec.nodeName empty"}
	for name, annotations := range map[string]map[string]string{
		"tenant's pod with spec.nodeName is refused":                  nil,
		"tenant's mirror pod with spec.nodeName is refused":           {corev1.MirrorPodAnnotationKey: "fake"},
		"tenant's DaemonSet-shaped pod with spec.nodeName is refused": nil,
	} {
		t.Run(name, func(t *testing.T) {
			pod := podtest.New("bound").Obj()
			pod.Spec.NodeName = nodeName
			pod.Annotations = annotations
			if strings.Contains(name, "DaemonSet") {
				pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet",
					Name: "no-such-daemonset", UID: "0c2b6ad3-4f53-4c55-8d8b-1d0c3f0a1e2d", Controller: ptr.To(true)}}
			}
			_, err := tenant.CoreV1().Pods(e.gated).Create(ctx, pod, metav1.CreateOptions{})
			if !apierrors.IsForbidden(err) || !containsAll(err.Error(), wantRefusal...) {
				t.Errorf("create = %v, want 403 containing %q", err, wantRefusal)
			}
		})
	}

	t.Run("a node's pods skip the webhook", func(t *testing.T) {
		cfg := e.cluster.Config()
		cfg.Impersonate = rest.ImpersonationConfig{UserName: admission.NodeUserPrefix + nodeName, Groups: []string{admission.NodesGroup}}
		node := kubernetes.NewForConfigOrDie(cfg)
		before := webhookRequests(t)
		for name, annotations := range map[string]map[string]string{
			"bound-by-node": nil,
			"static-web":    {corev1.MirrorPodAnnotationKey: "fake"},
		} {
			pod := podtest.New(name).Obj()
			pod.Spec.NodeName = nodeName
			pod.Annotations = annotations
			got, err := node.CoreV1().Pods(e.gated).Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("node creating pod %s: %v", name, err)
			}
			if gates.HasGate(got, v1alpha1.SchedulingGate) || got.Spec.NodeName != nodeName {
				t.Errorf("pod %s: gates %v, nodeName %q; want ungated on %s", name, gateNames(got), got.Spec.NodeName, nodeName)
			}
		}
		if got := webhookRequests(t) - before; e.mode == modeWebhook && got != 0 {
			t.Errorf("the API server called the webhook %v times for the node's pods, want 0 (matchConditions)", got)
		}
	})

	t.Run("a tenant's DaemonSet gets one gated pod per node, bound to it once admitted", func(t *testing.T) {
		before := webhookCount(t, "quotagate_webhook_requests_total", "gated")
		pods := e.createDaemonSet(t, tenant, "real-agent", len(nodes.Items))
		for i := range pods {
			if !gates.HasGate(&pods[i], v1alpha1.SchedulingGate) {
				t.Errorf("DaemonSet pod %s is not gated: %v", pods[i].Name, gateNames(&pods[i]))
			}
			if pods[i].Spec.NodeName != "" {
				t.Errorf("DaemonSet pod %s is bound to %s while gated", pods[i].Name, pods[i].Spec.NodeName)
			}
		}
		if got := webhookCount(t, "quotagate_webhook_requests_total", "gated") - before; e.mode == modeWebhook && got != float64(len(pods)) {
			t.Errorf("the webhook gated %v pods while the DaemonSet controller created %d, want all", got, len(pods))
		}

		// Admitted (the manager's identity removes the gate), the pod is scheduled to
		// the node the DaemonSet controller meant it for.
		pod := pods[0]
		target := daemonSetTarget(t, &pod)
		ungate, ok := gates.UngatePatch(&pod, v1alpha1.SchedulingGate, nil)
		if !ok {
			t.Fatalf("pod %s was not gated", pod.Name)
		}
		if _, err := e.managerClient(t).CoreV1().Pods(e.gated).Patch(ctx, pod.Name, types.JSONPatchType, ungate, metav1.PatchOptions{}); err != nil {
			t.Fatalf("manager removing the gate: %v", err)
		}
		testbed.Poll(t, waitTimeout, "the admitted DaemonSet pod to be bound to "+target, func(ctx context.Context) (bool, error) {
			got, err := e.client.CoreV1().Pods(e.gated).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return got.Spec.NodeName == target, nil
		})
		// The other stays gated, and the controller made no replacement for either.
		testbed.Poll(t, waitTimeout, "the DaemonSet's status to count the scheduled pod", func(ctx context.Context) (bool, error) {
			ds, err := e.client.AppsV1().DaemonSets(e.gated).Get(ctx, "real-agent", metav1.GetOptions{})
			return err == nil && ds.Status.ObservedGeneration == ds.Generation &&
				ds.Status.CurrentNumberScheduled == int32(len(nodes.Items)), err
		})
		list, err := e.client.CoreV1().Pods(e.gated).List(ctx, metav1.ListOptions{LabelSelector: "app=real-agent"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != len(nodes.Items) {
			t.Errorf("the DaemonSet has %d pods on %d nodes, want one per node", len(list.Items), len(nodes.Items))
		}
		for i := range list.Items {
			if p := &list.Items[i]; p.Name != pod.Name && !gates.HasGate(p, v1alpha1.SchedulingGate) {
				t.Errorf("pod %s lost its gate: %v", p.Name, gateNames(p))
			}
		}
	})

	t.Run("an exempt DaemonSet's pods skip the gate", func(t *testing.T) {
		// The test's admission step exempts e.gated/exemptDaemonSet, as the chart's
		// admission.exemptDaemonSets writes it.
		before := webhookRequests(t)
		pods := e.createDaemonSet(t, tenant, exemptDaemonSet, len(nodes.Items))
		for i := range pods {
			if gates.HasGate(&pods[i], v1alpha1.SchedulingGate) {
				t.Errorf("exempt DaemonSet pod %s is gated: %v", pods[i].Name, gateNames(&pods[i]))
			}
		}
		if got := webhookRequests(t) - before; e.mode == modeWebhook && got != 0 {
			t.Errorf("the API server called the webhook %v times for an exempt DaemonSet's %d pods, want 0", got, len(pods))
		}
	})

	t.Run("a tenant's pod owned by the exempt DaemonSet is gated", func(t *testing.T) {
		ds, err := e.client.AppsV1().DaemonSets(e.gated).Get(ctx, exemptDaemonSet, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod := podtest.New("fake-exempt").Obj()
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}}
		got, err := tenant.CoreV1().Pods(e.gated).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod: %v", err)
		}
		if !gates.HasGate(got, v1alpha1.SchedulingGate) {
			t.Errorf("the tenant's pod is not gated: %v", gateNames(got))
		}
	})
}

// createDaemonSet creates, as c, a DaemonSet named name in the opted-in namespace (its
// pods labelled app=name) and returns its pods once the DaemonSet controller has made
// one per node.
func (e *env) createDaemonSet(t *testing.T, c kubernetes.Interface, name string, nodes int) []corev1.Pod {
	t.Helper()
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: podtest.New("").Obj().Spec}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: template,
		},
	}
	if _, err := c.AppsV1().DaemonSets(e.gated).Create(t.Context(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating DaemonSet %s: %v", name, err)
	}
	var pods []corev1.Pod
	testbed.Poll(t, waitTimeout, "a pod of DaemonSet "+name+" for every node", func(ctx context.Context) (bool, error) {
		list, err := e.client.CoreV1().Pods(e.gated).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, err
		}
		pods = list.Items
		return len(pods) == nodes, nil
	})
	return pods
}

// daemonSetTarget is the node a DaemonSet pod is meant for: the DaemonSet controller
// writes it as a required node affinity on metadata.name.
func daemonSetTarget(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range term.MatchFields {
				if f.Key == "metadata.name" && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	t.Fatalf("pod %s has no node affinity on metadata.name: %+v", pod.Name, pod.Spec.Affinity)
	return ""
}

// testResizeGuard raises and lowers an admitted pod's resources in place, as
// the tenant, with the shipped resize guard in force.
func testResizeGuard(t *testing.T, e *env) {
	ctx := t.Context()
	e.applyShippedPolicy(t, "resize_guard.yaml")
	tenant := e.tenantClient(t)
	// The built-in edit role does not grant pods/resize (Kubernetes 1.37): a
	// team that resizes in place is given it, as here.
	e.grantResize(t, "tenant")

	// An admitted pod: created gated, then the manager removes quotagate's
	// gate. holdGate keeps it unscheduled, because the API server refuses a
	// resize of a running pod on a node that does not report resize support
	// (kwok's nodes do not).
	pod := podtest.New("resizable").Obj()
	pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: holdGate}}
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	pod.Spec.InitContainers = []corev1.Container{{
		Name: "sidecar", Image: "registry.k8s.io/pause:3.10", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		},
	}}
	created, err := tenant.CoreV1().Pods(e.gated).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	ungate, ok := gates.UngatePatch(created, v1alpha1.SchedulingGate, nil)
	if !ok {
		t.Fatalf("pod was not gated: %v", gateNames(created))
	}
	if _, err := e.managerClient(t).CoreV1().Pods(e.gated).Patch(ctx, pod.Name, types.JSONPatchType, ungate, metav1.PatchOptions{}); err != nil {
		t.Fatalf("manager removing the gate: %v", err)
	}

	resize := func(ctx context.Context, c kubernetes.Interface, namespace, name, patch string, dryRun bool) error {
		opts := metav1.PatchOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := c.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), opts, "resize")
		return err
	}
	container := func(name, requirements string) string {
		return `{"spec":{"containers":[{"name":"` + name + `","resources":` + requirements + `}]}}`
	}
	// The API server loads the policy asynchronously.
	testbed.Poll(t, waitTimeout, "the resize guard to take effect", func(ctx context.Context) (bool, error) {
		err := resize(ctx, tenant, e.gated, pod.Name, container("c", `{"requests":{"cpu":"200m"}}`), true)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "quotagate-resize-guard"), nil
	})

	refused := map[string]struct {
		client kubernetes.Interface
		patch  string
		want   string
	}{
		"requests.cpu up": {tenant, container("c", `{"requests":{"cpu":"200m"}}`), "container c requests.cpu 100m -> 200m"},
		"requests.memory up": {tenant, container("c", `{"requests":{"memory":"128Mi"}}`),
			"container c requests.memory 64Mi -> 128Mi"},
		"limits.cpu up":    {tenant, container("c", `{"limits":{"cpu":"1"}}`), "container c limits.cpu 500m -> 1"},
		"limits.memory up": {tenant, container("c", `{"limits":{"memory":"512Mi"}}`), "container c limits.memory 256Mi -> 512Mi"},
		"a sidecar's requests.cpu up": {tenant,
			`{"spec":{"initContainers":[{"name":"sidecar","resources":{"requests":{"cpu":"80m"}}}]}}`,
			"container sidecar requests.cpu 50m -> 80m"},
		"a sidecar's memory request, unset before": {tenant,
			`{"spec":{"initContainers":[{"name":"sidecar","resources":{"requests":{"memory":"32Mi"}}}]}}`,
			"container sidecar requests.memory unset -> 32Mi"},
		"cpu down but memory up": {tenant, container("c", `{"requests":{"cpu":"50m","memory":"100Mi"}}`),
			"container c requests.memory 64Mi -> 100Mi"},
		"a cluster admin's raise": {e.client, container("c", `{"limits":{"cpu":"600m"}}`), "container c limits.cpu 500m -> 600m"},
	}
	for name, tc := range refused {
		t.Run(name+" is refused", func(t *testing.T) {
			err := resize(ctx, tc.client, e.gated, pod.Name, tc.patch, false)
			want := []string{"quotagate-resize-guard", "pod resizable in namespace " + e.gated, "may be resized down but not up", tc.want}
			if !apierrors.IsForbidden(err) || !containsAll(err.Error(), want...) {
				t.Errorf("resize = %v, want 403 containing %q", err, want)
			}
		})
	}

	allowed := map[string]struct {
		patch string
		want  corev1.ResourceRequirements
	}{
		"the same values": {
			patch: container("c", `{"requests":{"cpu":"0.1"}}`),
			want: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
		},
		"requests and limits down": {
			patch: container("c", `{"requests":{"cpu":"50m","memory":"32Mi"},"limits":{"cpu":"250m","memory":"200Mi"}}`),
			want: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("200Mi")},
			},
		},
	}
	for _, name := range []string{"the same values", "requests and limits down"} {
		tc := allowed[name]
		t.Run(name+" passes", func(t *testing.T) {
			if err := resize(ctx, tenant, e.gated, pod.Name, tc.patch, false); err != nil {
				t.Fatalf("resize: %v", err)
			}
			got, err := e.client.CoreV1().Pods(e.gated).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Spec.Containers[0].Resources); diff != "" {
				t.Errorf("resources after the resize (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("a raise in a namespace that is not opted in passes", func(t *testing.T) {
		other := podtest.New("elsewhere").Obj()
		other.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: holdGate}}
		other.Spec.Containers[0].Resources = pod.Spec.Containers[0].Resources
		if _, err := e.client.CoreV1().Pods(e.plain).Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod: %v", err)
		}
		if err := resize(ctx, e.client, e.plain, other.Name, container("c", `{"requests":{"cpu":"200m"}}`), false); err != nil {
			t.Errorf("resize in %s: %v", e.plain, err)
		}
	})
}

// tenantClient returns a client acting as the ServiceAccount "tenant" of the
// opted-in namespace, bound there to the built-in edit ClusterRole, once it
// may create pods.
func (e *env) tenantClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	if e.tenant != nil {
		return e.tenant
	}
	ctx := t.Context()
	cfg, err := e.cluster.ServiceAccountConfig(ctx, e.gated, "tenant", 0)
	if err != nil {
		t.Fatalf("credentials for the tenant: %v", err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: e.gated, Name: "tenant"}},
	}
	if _, err := e.client.RbacV1().RoleBindings(e.gated).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding the tenant to edit: %v", err)
	}
	c := kubernetes.NewForConfigOrDie(cfg)
	// The controller manager aggregates edit's rules after start-up.
	testbed.Poll(t, waitTimeout, "the tenant to be allowed to create pods", func(ctx context.Context) (bool, error) {
		r, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: e.gated, Verb: "create", Resource: "pods",
			}},
		}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	})
	e.tenant = c
	return c
}

// grantResize lets the ServiceAccount name of the opted-in namespace resize
// its pods in place.
func (e *env) grantResize(t *testing.T, name string) {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "resize-pods"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/resize"}, Verbs: []string{"patch", "update"}}},
	}
	if _, err := e.client.RbacV1().Roles(e.gated).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Role: %v", err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "resize-pods-" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: e.gated, Name: name}},
	}
	if _, err := e.client.RbacV1().RoleBindings(e.gated).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating RoleBinding: %v", err)
	}
}

// webhookRequests is how many requests the in-process webhook has answered.
func webhookRequests(t *testing.T) float64 {
	t.Helper()
	return webhookCount(t, "quotagate_webhook_requests_total", "")
}

// webhookCount sums the webhook's counter name (over every label value, or
// only reason=reason) from controller-runtime's registry, which the webhook
// server in this process records into.
func webhookCount(t *testing.T, name, reason string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			match := reason == ""
			for _, l := range m.GetLabel() {
				match = match || ((l.GetName() == "reason" || l.GetName() == "result") && l.GetValue() == reason)
			}
			if match {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
