package admission_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/gates"
)

const otherGate = "example.com/other"

func testGating(t *testing.T, e *env) {
	tests := map[string]struct {
		namespace string
		gates     []string
		nodeName  string
		want      []string
		// wantRefused: the admission step refuses the create.
		wantRefused bool
	}{
		"pod in an opted-in namespace is gated": {
			namespace: e.gated, want: []string{v1alpha1.SchedulingGate},
		},
		"pod in another namespace is untouched": {namespace: e.plain},
		"pod that has the gate keeps one": {
			namespace: e.gated, gates: []string{v1alpha1.SchedulingGate}, want: []string{v1alpha1.SchedulingGate},
		},
		"pod with another gate gets ours appended": {
			namespace: e.gated, gates: []string{otherGate}, want: []string{otherGate, v1alpha1.SchedulingGate},
		},
		// Only a node may create a bound pod in an opted-in namespace (see
		// testEscapes); elsewhere anyone may.
		"pod bound to a node by an administrator is refused": {namespace: e.gated, nodeName: "no-such-node", wantRefused: true},
		"pod bound to a node elsewhere is untouched":         {namespace: e.plain, nodeName: "no-such-node"},
	}
	i := 0
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			i++
			pod := podtest.New("gating-" + strconv.Itoa(i)).Obj()
			pod.Spec.NodeName = tc.nodeName
			for _, g := range tc.gates {
				pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
			}
			got, err := e.client.CoreV1().Pods(tc.namespace).Create(t.Context(), pod, metav1.CreateOptions{})
			if tc.wantRefused {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may only be set on a new pod by a node") {
					t.Errorf("create = %v, want 403 from the %s", err, e.mode)
				}
				return
			}
			if err != nil {
				t.Fatalf("creating pod: %v", err)
			}
			if diff := cmp.Diff(tc.want, gateNames(got)); diff != "" {
				t.Errorf("scheduling gates (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("gated pod shows SchedulingGated", func(t *testing.T) {
		created, err := e.client.CoreV1().Pods(e.gated).Create(t.Context(), podtest.New("shows-gated").Obj(), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod: %v", err)
		}
		testbed.Poll(t, waitTimeout, "PodScheduled=False reason SchedulingGated", func(ctx context.Context) (bool, error) {
			pod, err := e.client.CoreV1().Pods(e.gated).Get(ctx, created.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonSchedulingGated {
					return true, nil
				}
			}
			return false, nil
		})
	})
}

func testWorkloads(t *testing.T, e *env) {
	ctx := t.Context()
	template := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
			Spec:       podtest.New("").Obj().Spec,
		}
	}
	selector := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}

	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: selector("web"), Template: template("web")},
	}
	if _, err := e.client.AppsV1().Deployments(e.gated).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Deployment: %v", err)
	}
	jobTemplate := template("batch")
	jobTemplate.Spec.RestartPolicy = corev1.RestartPolicyNever
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "batch"},
		Spec:       batchv1.JobSpec{Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), Template: jobTemplate},
	}
	if _, err := e.client.BatchV1().Jobs(e.gated).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Job: %v", err)
	}
	dsTemplate := template("agent")
	dsTemplate.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec:       appsv1.DaemonSetSpec{Selector: selector("agent"), Template: dsTemplate},
	}
	if _, err := e.client.AppsV1().DaemonSets(e.gated).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating DaemonSet: %v", err)
	}

	tests := map[string]struct {
		app       string
		wantGated bool
	}{
		"Deployment's pods are gated": {app: "web", wantGated: true},
		"Job's pods are gated":        {app: "batch", wantGated: true},
		"DaemonSet's pods are gated":  {app: "agent", wantGated: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var pods []corev1.Pod
			testbed.Poll(t, waitTimeout, "2 pods of "+tc.app, func(ctx context.Context) (bool, error) {
				list, err := e.client.CoreV1().Pods(e.gated).List(ctx, metav1.ListOptions{LabelSelector: "app=" + tc.app})
				if err != nil {
					return false, err
				}
				pods = list.Items
				return len(pods) >= 2, nil
			})
			for i := range pods {
				if got := gates.HasGate(&pods[i], v1alpha1.SchedulingGate); got != tc.wantGated {
					t.Errorf("pod %s has the gate: %v, want %v (gates %v)", pods[i].Name, got, tc.wantGated, gateNames(&pods[i]))
				}
			}
		})
	}
}

func testGateGuard(t *testing.T, e *env) {
	ctx := t.Context()
	e.applyShippedPolicy(t, "gate_guard.yaml")
	intruder := e.serviceAccountClient(t, e.gated, "intruder")
	manager := e.managerClient(t)

	pod, err := e.client.CoreV1().Pods(e.gated).Create(ctx, podtest.New("guarded").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	if !gates.HasGate(pod, v1alpha1.SchedulingGate) {
		t.Fatalf("pod was not gated: %v", gateNames(pod))
	}
	ungate, ok := gates.UngatePatch(pod, v1alpha1.SchedulingGate, map[string]string{
		v1alpha1.AdmittedAtAnnotation: "2026-11-30T03:00:00Z",
		v1alpha1.AdmittedByAnnotation: "team-a/team-a",
	})
	if !ok {
		t.Fatal("UngatePatch() ok = false for a gated pod")
	}
	patch := func(ctx context.Context, c kubernetes.Interface, pt types.PatchType, data []byte, dryRun bool) (*corev1.Pod, error) {
		opts := metav1.PatchOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		return c.CoreV1().Pods(e.gated).Patch(ctx, pod.Name, pt, data, opts)
	}
	// The API server loads the policy asynchronously: wait until a dry run
	// of the intruder's patch is refused by it.
	testbed.Poll(t, waitTimeout, "the gate guard to take effect", func(ctx context.Context) (bool, error) {
		_, err := patch(ctx, intruder, types.JSONPatchType, ungate, true)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "quotagate-gate-guard"), nil
	})

	t.Run("a user who removes the gate gets 403 naming the gate and the manager", func(t *testing.T) {
		_, err := patch(ctx, intruder, types.JSONPatchType, ungate, false)
		if !apierrors.IsForbidden(err) {
			t.Fatalf("patch = %v, want 403 Forbidden", err)
		}
		if msg := err.Error(); !containsAll(msg, v1alpha1.SchedulingGate,
			"system:serviceaccount:quotagate-system:quotagate-manager", "system:serviceaccount:"+e.gated+":intruder") {
			t.Errorf("message %q does not name the gate, the manager and the user", msg)
		}
		got, err := e.client.CoreV1().Pods(e.gated).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting pod: %v", err)
		}
		if !gates.HasGate(got, v1alpha1.SchedulingGate) {
			t.Errorf("pod lost its gate: %v", gateNames(got))
		}
	})

	t.Run("a strategic merge patch that replaces the gates is refused too", func(t *testing.T) {
		_, err := patch(ctx, intruder, types.StrategicMergePatchType,
			[]byte(`{"spec":{"schedulingGates":[{"$patch":"replace"}]}}`), false)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "quotagate-gate-guard") {
			t.Errorf("patch = %v, want 403 from the gate guard", err)
		}
	})

	t.Run("an unrelated update passes", func(t *testing.T) {
		got, err := patch(ctx, intruder, types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"gold"}}}`), false)
		if err != nil {
			t.Fatalf("label patch: %v", err)
		}
		if got.Labels["tier"] != "gold" || !gates.HasGate(got, v1alpha1.SchedulingGate) {
			t.Errorf("after the label patch: labels %v, gates %v; want tier=gold and still gated", got.Labels, gateNames(got))
		}
	})

	t.Run("the manager removes the gate", func(t *testing.T) {
		// The manager builds its patch from the pod as it sees it now (the label
		// update above changed it): a patch built from a stale copy that adds the
		// whole annotations map is refused by its resourceVersion test.
		current, err := e.client.CoreV1().Pods(e.gated).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting pod: %v", err)
		}
		fresh, ok := gates.UngatePatch(current, v1alpha1.SchedulingGate, map[string]string{
			v1alpha1.AdmittedAtAnnotation: "2026-11-30T03:00:00Z",
			v1alpha1.AdmittedByAnnotation: "team-a/team-a",
		})
		if !ok {
			t.Fatal("UngatePatch() ok = false for a gated pod")
		}
		got, err := patch(ctx, manager, types.JSONPatchType, fresh, false)
		if err != nil {
			t.Fatalf("manager's ungate patch: %v", err)
		}
		if gates.HasGate(got, v1alpha1.SchedulingGate) {
			t.Errorf("pod still gated: %v", gateNames(got))
		}
		if got.Annotations[v1alpha1.AdmittedByAnnotation] != "team-a/team-a" {
			t.Errorf("annotations %v, want %s set", got.Annotations, v1alpha1.AdmittedByAnnotation)
		}
	})

	t.Run("a user who rewrites or removes the admitted-by record gets 403", func(t *testing.T) {
		for _, p := range []string{
			`[{"op":"replace","path":"/metadata/annotations/quotagate.io~1admitted-by","value":"elsewhere"}]`,
			`[{"op":"remove","path":"/metadata/annotations/quotagate.io~1admitted-by"}]`,
		} {
			_, err := patch(ctx, intruder, types.JSONPatchType, []byte(p), false)
			if !apierrors.IsForbidden(err) || !containsAll(err.Error(), v1alpha1.AdmittedByAnnotation, "system:serviceaccount:"+e.gated+":intruder") {
				t.Errorf("patch %s = %v, want 403 naming the annotation and the user", p, err)
			}
		}
		got, err := e.client.CoreV1().Pods(e.gated).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting pod: %v", err)
		}
		if got.Annotations[v1alpha1.AdmittedByAnnotation] != "team-a/team-a" {
			t.Errorf("admitted-by is %q, want it untouched", got.Annotations[v1alpha1.AdmittedByAnnotation])
		}
	})
}

// testAdmissionRecordAtCreate: the admission record (admitted-by, admitted-at) cannot be
// forged on a new pod, by a tenant with edit nor through a workload's template; the
// manager's identity may write it. Runs with the gate guard of testGateGuard in force.
func testAdmissionRecordAtCreate(t *testing.T, e *env) {
	ctx := t.Context()
	tenant := e.tenantClient(t)
	tenantUser := "system:serviceaccount:" + e.gated + ":tenant"
	forged := func(name string, annotations map[string]string) *corev1.Pod {
		pod := podtest.New(name).Obj()
		pod.Annotations = annotations
		return pod
	}

	for name, annotations := range map[string]map[string]string{
		"admitted-by":          {v1alpha1.AdmittedByAnnotation: e.gated + "/big-budget"},
		"an empty admitted-by": {v1alpha1.AdmittedByAnnotation: ""},
		"admitted-at":          {v1alpha1.AdmittedAtAnnotation: "2026-12-02T04:00:00Z"},
	} {
		t.Run("a tenant's new pod with "+name+" is refused", func(t *testing.T) {
			// The tenant's edit is in the opted-in namespace only; a cluster
			// administrator tries in a namespace that is not opted in.
			for namespace, c := range map[string]kubernetes.Interface{e.gated: tenant, e.plain: e.client} {
				_, err := c.CoreV1().Pods(namespace).Create(ctx, forged("forged", annotations), metav1.CreateOptions{})
				var key string
				for k := range annotations {
					key = k
				}
				want := []string{"quotagate-gate-guard", key, "may write it", "A new Pod may not carry it"}
				if !apierrors.IsForbidden(err) || !containsAll(err.Error(), want...) {
					t.Errorf("create in %s = %v, want 403 containing %q", namespace, err, want)
				}
			}
			for _, namespace := range []string{e.gated, e.plain} {
				if _, err := e.client.CoreV1().Pods(namespace).Get(ctx, "forged", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("the forged pod exists in %s: %v", namespace, err)
				}
			}
		})
	}
	t.Run("the refusal names the tenant and the manager", func(t *testing.T) {
		_, err := tenant.CoreV1().Pods(e.gated).Create(ctx,
			forged("forged", map[string]string{v1alpha1.AdmittedByAnnotation: "x", v1alpha1.AdmittedAtAnnotation: "y"}), metav1.CreateOptions{})
		want := []string{v1alpha1.AdmittedAtAnnotation + ", " + v1alpha1.AdmittedByAnnotation,
			"only system:serviceaccount:quotagate-system:quotagate-manager may write it", "not " + tenantUser}
		if !apierrors.IsForbidden(err) || !containsAll(err.Error(), want...) {
			t.Errorf("create = %v, want 403 containing %q", err, want)
		}
	})

	t.Run("the manager may create a pod with the record", func(t *testing.T) {
		pod := forged("recorded", map[string]string{v1alpha1.AdmittedByAnnotation: e.gated + "/team-a", v1alpha1.AdmittedAtAnnotation: "2026-12-02T04:00:00Z"})
		got, err := e.managerClient(t).CoreV1().Pods(e.gated).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("manager's create: %v", err)
		}
		if got.Annotations[v1alpha1.AdmittedByAnnotation] != e.gated+"/team-a" || !gates.HasGate(got, v1alpha1.SchedulingGate) {
			t.Errorf("annotations %v, gates %v; want the record kept and the pod gated", got.Annotations, gateNames(got))
		}
	})

	t.Run("a Job whose template carries the record gets no pod, and says why", func(t *testing.T) {
		template := corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AdmittedByAnnotation: e.gated + "/big-budget"}},
			Spec:       podtest.New("").Obj().Spec,
		}
		template.Spec.RestartPolicy = corev1.RestartPolicyNever
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "copied"}, Spec: batchv1.JobSpec{Template: template}}
		created, err := tenant.BatchV1().Jobs(e.gated).Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating Job: %v", err)
		}
		var message string
		testbed.Poll(t, waitTimeout, "a FailedCreate event on the Job", func(ctx context.Context) (bool, error) {
			events, err := e.client.CoreV1().Events(e.gated).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.uid=" + string(created.UID) + ",reason=FailedCreate",
			})
			if err != nil || len(events.Items) == 0 {
				return false, err
			}
			message = events.Items[0].Message
			return true, nil
		})
		if want := []string{v1alpha1.AdmittedByAnnotation, "A new Pod may not carry it", "the template"}; !containsAll(message, want...) {
			t.Errorf("FailedCreate message %q, want it to contain %q", message, want)
		}
		pods, err := e.client.CoreV1().Pods(e.gated).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=copied"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 0 {
			t.Errorf("the Job has %d pods, want none", len(pods.Items))
		}
		if err := tenant.BatchV1().Jobs(e.gated).Delete(ctx, job.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting the Job: %v", err)
		}
	})
}

func testFailClosed(t *testing.T, e *env) {
	ctx := t.Context()
	survivor, err := e.client.CoreV1().Pods(e.gated).Create(ctx, podtest.New("survivor").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	e.stopWebhook()

	t.Run("pod create in an opted-in namespace fails", func(t *testing.T) {
		_, err := e.client.CoreV1().Pods(e.gated).Create(ctx, podtest.New("refused").Obj(), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), `failed calling webhook "gate.quotagate.io"`) {
			t.Errorf("create = %v, want a failure calling gate.quotagate.io", err)
		}
	})
	t.Run("pod create elsewhere works", func(t *testing.T) {
		if _, err := e.client.CoreV1().Pods(e.plain).Create(ctx, podtest.New("unaffected").Obj(), metav1.CreateOptions{}); err != nil {
			t.Errorf("create in %s: %v", e.plain, err)
		}
	})
	t.Run("updates of gated pods still work", func(t *testing.T) {
		_, err := e.client.CoreV1().Pods(e.gated).Patch(ctx, survivor.Name, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"still":"works"}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Errorf("label patch with the webhook down: %v", err)
		}
	})
}

// applyShippedPolicy creates the admission policies in config/policy/<file>.
func (e *env) applyShippedPolicy(t *testing.T, file string) {
	t.Helper()
	e.applyPolicy(t, file, string(readFile(t, "../../config/policy/"+file)))
}

// applyPolicy creates the admission policies in manifests, read from file.
func (e *env) applyPolicy(t *testing.T, file, manifests string) {
	t.Helper()
	for _, doc := range strings.Split(manifests, "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		var err error
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			var p admissionregistrationv1.ValidatingAdmissionPolicy
			if err = yaml.UnmarshalStrict([]byte(doc), &p); err == nil {
				_, err = e.client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(t.Context(), &p, metav1.CreateOptions{})
			}
		case "MutatingAdmissionPolicy":
			var p admissionregistrationv1.MutatingAdmissionPolicy
			if err = yaml.UnmarshalStrict([]byte(doc), &p); err == nil {
				_, err = e.client.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(t.Context(), &p, metav1.CreateOptions{})
			}
		case "MutatingAdmissionPolicyBinding":
			var b admissionregistrationv1.MutatingAdmissionPolicyBinding
			if err = yaml.UnmarshalStrict([]byte(doc), &b); err == nil {
				_, err = e.client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(t.Context(), &b, metav1.CreateOptions{})
			}
		case "ValidatingAdmissionPolicyBinding":
			var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
			if err = yaml.UnmarshalStrict([]byte(doc), &b); err == nil {
				_, err = e.client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(t.Context(), &b, metav1.CreateOptions{})
			}
		default:
			t.Fatalf("%s holds an unexpected %q", file, meta.Kind)
		}
		if err != nil {
			t.Fatalf("creating %s: %v", meta.Kind, err)
		}
	}
}

// managerClient returns a client acting as quotagate's manager
// (quotagate-system/quotagate-manager), which may get and patch pods.
func (e *env) managerClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	if e.manager == nil {
		e.manager = e.serviceAccountClient(t, "quotagate-system", "quotagate-manager")
	}
	return e.manager
}

// serviceAccountClient returns a client acting as the ServiceAccount
// namespace/name, which may get, create and patch pods everywhere, and get and patch
// ResourceClaims.
func (e *env) serviceAccountClient(t *testing.T, namespace, name string) kubernetes.Interface {
	t.Helper()
	ctx := t.Context()
	cfg, err := e.cluster.ServiceAccountConfig(ctx, namespace, name, 0)
	if err != nil {
		t.Fatalf("credentials for %s/%s: %v", namespace, name, err)
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "patch-pods-" + name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "create", "patch", "update"}},
			{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims"}, Verbs: []string{"get", "patch"}},
		},
	}
	if _, err := e.client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ClusterRole: %v", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
	}
	if _, err := e.client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ClusterRoleBinding: %v", err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}
