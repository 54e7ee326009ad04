package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// TestDependentPodsStartWhenReady, against a real kube-apiserver with
// kube-controller-manager's Job and volume controllers, as a tenant with nothing but the
// built-in edit role, under a manager that watches Secrets (WatchSecrets): a Job whose pods wait for another Job starts only once that Job
// completed; a pod that waits for a PersistentVolumeClaim starts once it is Bound, and
// one that waits for a Secret once it exists. A pod that waits for a Job that failed
// gets a Warning event saying so; two Jobs that wait for each other are reported as a
// cycle; a pod that names another namespace's object is refused with why. None of them
// is ungated early.
func TestDependentPodsStartWhenReady(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "b", cpu("20"), ""))
	tenant := editTenant(t, ns)
	grantSecretDependencies(t)
	reg := prometheus.NewRegistry()
	m := startManager(t, func(o *controller.Options) { o.WatchSecrets = true; o.Registerer = reg }, false)

	waitsFor := func(job *batchv1.Job, value string) *batchv1.Job {
		job.Spec.Template.Annotations[v1alpha1.WaitForAnnotation] = value
		return job
	}
	tenantCreate(t, tenant.BatchV1().Jobs(ns).Create, waitsFor(gatedJob(ns, "train", "1", 1, "1h", ""), "job/prepare"))
	tenantCreate(t, tenant.BatchV1().Jobs(ns).Create, gatedJob(ns, "prepare", "1", 1, "3s", ""))
	reader := gatedPod(ns, "reader", "1")
	reader.Annotations = map[string]string{v1alpha1.WaitForAnnotation: "pvc/data, secret/creds"}
	tenantCreate(t, tenant.CoreV1().Pods(ns).Create, reader)
	tenantCreate(t, tenant.CoreV1().PersistentVolumeClaims(ns).Create, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(""),
			VolumeName:       ns + "-data", // static: the PV an administrator makes later
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	})
	doomed := gatedJob(ns, "doomed", "1", 1, "1h", "")
	doomed.Spec.ActiveDeadlineSeconds = ptr.To[int64](2) // fails with DeadlineExceeded
	tenantCreate(t, tenant.BatchV1().Jobs(ns).Create, doomed)
	tenantCreate(t, tenant.BatchV1().Jobs(ns).Create, waitsFor(gatedJob(ns, "after-doomed", "1", 1, "1h", ""), "job/doomed"))
	tenantCreate(t, tenant.BatchV1().Jobs(ns).Create, waitsFor(gatedJob(ns, "ping", "1", 1, "1h", ""), "job/pong"))
	tenantCreate(t, tenant.BatchV1().Jobs(ns).Create, waitsFor(gatedJob(ns, "pong", "1", 1, "1h", ""), "job/ping"))
	elsewhere := gatedPod(ns, "elsewhere", "1")
	elsewhere.Annotations = map[string]string{v1alpha1.WaitForAnnotation: "kube-system/secret/anything"}
	tenantCreate(t, tenant.CoreV1().Pods(ns).Create, elsewhere)

	podOf := func(job string) string {
		var name string
		testbed.Poll(t, time.Minute, "a pod of Job "+job, func(context.Context) (bool, error) {
			for _, p := range podsOf(t, ns) {
				if p.Labels["job-name"] == job {
					name = p.Name
					return true, nil
				}
			}
			return false, nil
		})
		return name
	}
	train := podOf("train")
	waitReason(t, m, ns, train, quota.CodeDependencyPending, "waiting for Job prepare to complete")
	waitReason(t, m, ns, "reader", quota.CodeDependencyPending, "waiting for PersistentVolumeClaim data to be Bound (it is Pending)")
	waitReason(t, m, ns, podOf("ping"), quota.CodeDependencyCycle, "Job ping waits for Job pong, which waits for Job ping: a dependency cycle")
	waitReason(t, m, ns, podOf("pong"), quota.CodeDependencyCycle, "Job pong waits for Job ping, which waits for Job pong: a dependency cycle")
	waitReason(t, m, ns, "elsewhere", quota.CodeDependencyInvalid, `"kube-system/secret/anything" is not kind/name: a pod waits only for objects of its own namespace`)
	if ev := waitForWaitingEvent(t, ns, "elsewhere", string(quota.CodeDependencyInvalid)); ev.Type != corev1.EventTypeWarning {
		t.Errorf("the refused pod's event is %s, want Warning", ev.Type)
	}
	// The metric counts them by reason (other tests' pods may add to the counts).
	testbed.Poll(t, time.Minute, "quotagate_gated_pods_by_reason to count them", func(context.Context) (bool, error) {
		byReason := func(code quota.ReasonCode) float64 {
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range families {
				for _, m := range f.GetMetric() {
					if f.GetName() == "quotagate_gated_pods_by_reason" && len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == string(code) {
						return m.GetGauge().GetValue()
					}
				}
			}
			return 0
		}
		return byReason(quota.CodeDependencyPending) >= 2 && byReason(quota.CodeDependencyCycle) >= 2 && byReason(quota.CodeDependencyInvalid) >= 1, nil
	})

	// train: never ungated while prepare has not completed.
	testbed.PollEvery(t, 50*time.Millisecond, 2*time.Minute, "train to be ungated once prepare completed", func(context.Context) (bool, error) {
		p, err := clientset.CoreV1().Pods(ns).Get(ctx, train, metav1.GetOptions{})
		if err != nil || gates.HasGate(p, v1alpha1.SchedulingGate) {
			return false, err
		}
		prepare, err := clientset.BatchV1().Jobs(ns).Get(ctx, "prepare", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if prepare.Status.CompletionTime == nil {
			t.Fatalf("train was ungated while Job prepare has not completed (conditions %v)", prepare.Status.Conditions)
		}
		admitted, err := time.Parse(time.RFC3339, p.Annotations[v1alpha1.AdmittedAtAnnotation])
		if err != nil {
			t.Fatalf("train's admitted-at %q: %v", p.Annotations[v1alpha1.AdmittedAtAnnotation], err)
		}
		if admitted.Before(prepare.Status.CompletionTime.Time) {
			t.Errorf("train admitted at %s, before prepare completed at %s", admitted, prepare.Status.CompletionTime.Time)
		}
		return true, nil
	})

	// The Job that waits for a failed one is told so, with a Warning.
	after := podOf("after-doomed")
	waitReason(t, m, ns, after, quota.CodeDependencyFailed, "Job doomed failed (DeadlineExceeded): it will never complete")
	if ev := waitForWaitingEvent(t, ns, after, string(quota.CodeDependencyFailed)); ev.Type != corev1.EventTypeWarning {
		t.Errorf("the event of a pod whose dependency failed is %s, want Warning", ev.Type)
	}

	// reader: the claim binds once an administrator makes its volume; then it waits for
	// the Secret, and starts once the tenant makes it.
	if !isGated(t, ns, "reader") {
		t.Fatal("reader was ungated while its claim is Pending")
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-data"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + ns}},
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: "data"},
		},
	}
	mustCreate(t, pv)
	t.Cleanup(func() { _ = admin.Delete(context.Background(), pv) })
	waitReason(t, m, ns, "reader", quota.CodeDependencyPending, "waiting for Secret creds, which does not exist yet")
	if c, err := clientset.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{}); err != nil || c.Status.Phase != corev1.ClaimBound {
		t.Fatalf("claim data: %v, phase %v; reader moved on to the Secret before it was Bound", err, c.Status.Phase)
	}
	if !isGated(t, ns, "reader") {
		t.Fatal("reader was ungated before the Secret exists")
	}
	tenantCreate(t, tenant.CoreV1().Secrets(ns).Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, StringData: map[string]string{"token": "x"}})
	testbed.Poll(t, time.Minute, "reader to be ungated once the Secret exists", func(context.Context) (bool, error) { return !isGated(t, ns, "reader"), nil })

	for _, name := range []string{podOf("ping"), podOf("pong"), after, "elsewhere"} {
		if !isGated(t, ns, name) {
			t.Errorf("pod %s was ungated, though what it waits for can never be ready", name)
		}
	}
	if !strings.HasPrefix(train, "train-") {
		t.Errorf("train's pod is %s", train)
	}
}

// grantSecretDependencies grants the manager list and watch on Secrets, as the chart
// does with manager.watchSecrets (templates/manager-secrets-rbac.yaml), for the test.
func grantSecretDependencies(t *testing.T) {
	t.Helper()
	name := managerName + "-secret-dependencies"
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: managerName, Namespace: systemNamespace}},
	}
	mustCreate(t, role, binding)
	t.Cleanup(func() {
		_ = admin.Delete(context.Background(), binding)
		_ = admin.Delete(context.Background(), role)
	})
}
