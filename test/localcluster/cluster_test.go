package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
)

// waitTimeout bounds every wait for the cluster to act: kwok's pod stages take up to
// a few seconds each, and the machine may be busy.
const waitTimeout = 2 * time.Minute

func TestCluster(t *testing.T) {
	c := StartForTest(t, Options{})
	client := kubernetes.NewForConfigOrDie(c.Config())

	t.Run("a gated pod runs on a kwok node once its gate is removed", func(t *testing.T) {
		ctx := t.Context()
		ns := createNamespace(t, client, "gated")
		pod := podtest.New("p").NS(ns).Gated().Obj()
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("Creating pod: %v", err)
		}
		got := waitForPod(t, client, ns, "p", "PodScheduled=False/SchedulingGated", func(p *corev1.Pod) bool {
			c := podCondition(p, corev1.PodScheduled)
			return c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonSchedulingGated
		})
		if got.Spec.NodeName != "" {
			t.Fatalf("Gated pod was bound to %s", got.Spec.NodeName)
		}

		patch := fmt.Sprintf(`[{"op":"test","path":"/spec/schedulingGates/0/name","value":%q},{"op":"remove","path":"/spec/schedulingGates/0"}]`, v1alpha1.SchedulingGate)
		if _, err := client.CoreV1().Pods(ns).Patch(ctx, "p", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("Removing the gate: %v", err)
		}
		got = waitForPod(t, client, ns, "p", "Running", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning
		})
		node, err := client.CoreV1().Nodes().Get(ctx, got.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Getting the pod's node %q: %v", got.Spec.NodeName, err)
		}
		if diff := cmp.Diff("kwok", node.Labels[NodeTypeLabel]); diff != "" {
			t.Errorf("Node %s type label (-want +got):\n%s", node.Name, diff)
		}
	})

	t.Run("a job's pods succeed and the job completes", func(t *testing.T) {
		ctx := t.Context()
		ns := createNamespace(t, client, "job")
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: ns},
			Spec: batchv1.JobSpec{
				Completions: ptr.To[int32](2),
				Parallelism: ptr.To[int32](2),
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
						"pod-complete.stage.kwok.x-k8s.io/delay":        "1s",
						"pod-complete.stage.kwok.x-k8s.io/jitter-delay": "2s",
					}},
					Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers:    []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
					},
				},
			},
		}
		if _, err := client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatalf("Creating job: %v", err)
		}
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
			j, err := client.BatchV1().Jobs(ns).Get(ctx, "j", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range j.Status.Conditions {
				if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("Waiting for job to complete: %v", err)
		}
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=j"})
		if err != nil {
			t.Fatalf("Listing job pods: %v", err)
		}
		var phases []corev1.PodPhase
		for _, p := range pods.Items {
			phases = append(phases, p.Status.Phase)
		}
		if diff := cmp.Diff([]corev1.PodPhase{corev1.PodSucceeded, corev1.PodSucceeded}, phases); diff != "" {
			t.Errorf("Job pod phases (-want +got):\n%s", diff)
		}
	})

	t.Run("a service account may list pods only once RBAC allows it", func(t *testing.T) {
		ctx := t.Context()
		home := createNamespace(t, client, "sa-home")
		target := createNamespace(t, client, "sa-target")
		cfg, err := c.ServiceAccountConfig(ctx, home, "reader", 0)
		if err != nil {
			t.Fatalf("ServiceAccountConfig: %v", err)
		}
		// Go through a kubeconfig file, as a component run with --kubeconfig would.
		path := filepath.Join(t.TempDir(), "reader.kubeconfig")
		if err := c.WriteKubeconfig(cfg, path); err != nil {
			t.Fatalf("WriteKubeconfig: %v", err)
		}
		fromFile, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatalf("Loading %s: %v", path, err)
		}
		reader := kubernetes.NewForConfigOrDie(fromFile)

		review, err := reader.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("Asking who the token is: %v", err)
		}
		if diff := cmp.Diff("system:serviceaccount:"+home+":reader", review.Status.UserInfo.Username); diff != "" {
			t.Errorf("Username (-want +got):\n%s", diff)
		}

		_, err = reader.CoreV1().Pods(target).List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("Listing pods in %s without a role binding: got error %v, want Forbidden", target, err)
		}

		role := &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: target},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}},
		}
		if _, err := client.RbacV1().Roles(target).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatalf("Creating role: %v", err)
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: target},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: home, Name: "reader"}},
		}
		if _, err := client.RbacV1().RoleBindings(target).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatalf("Creating role binding: %v", err)
		}
		// The authorizer sees the binding through an informer: allow it a moment.
		var lastErr error
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
			_, lastErr = reader.CoreV1().Pods(target).List(ctx, metav1.ListOptions{})
			return lastErr == nil, nil
		})
		if err != nil {
			t.Fatalf("Listing pods in %s after the role binding: %v", target, lastErr)
		}
	})
}

func TestTwoClustersAtOnce(t *testing.T) {
	ctx := t.Context()
	names := []string{"a", "b"}
	clusters := make([]*Cluster, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i := range names {
		wg.Go(func() {
			clusters[i], errs[i] = Start(ctx, Options{Nodes: 1, Dir: t.TempDir()})
		})
	}
	wg.Wait()
	for i, c := range clusters {
		if c != nil {
			t.Cleanup(func() {
				if err := c.Stop(); err != nil {
					t.Errorf("Stopping cluster %s: %v", names[i], err)
				}
			})
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Starting two clusters at once: %v", err)
	}
	if clusters[0].Config().Host == clusters[1].Config().Host {
		t.Fatalf("Both clusters serve at %s", clusters[0].Config().Host)
	}

	clients := make([]kubernetes.Interface, len(names))
	for i, name := range names {
		clients[i] = kubernetes.NewForConfigOrDie(clusters[i].Config())
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-in-" + name}}
		if _, err := clients[i].CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatalf("Creating namespace in cluster %s: %v", name, err)
		}
	}
	for i, name := range names {
		list, err := clients[i].CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("Listing namespaces in cluster %s: %v", name, err)
		}
		var ours []string
		for _, ns := range list.Items {
			if strings.HasPrefix(ns.Name, "only-in-") {
				ours = append(ours, ns.Name)
			}
		}
		if diff := cmp.Diff([]string{"only-in-" + name}, ours); diff != "" {
			t.Errorf("Test namespaces seen by cluster %s (-want +got):\n%s", name, diff)
		}
	}

	// Stopping one leaves none of its processes behind and the other one serving.
	if err := clusters[0].Stop(); err != nil {
		t.Fatalf("Stopping cluster a: %v", err)
	}
	if err := clusters[0].Stop(); err != nil {
		t.Errorf("Stopping cluster a a second time: %v", err)
	}
	if left := processesUsing(t, clusters[0].Dir()); len(left) > 0 {
		t.Errorf("Processes of cluster a still running after Stop: %v", left)
	}
	if _, err := clients[1].CoreV1().Namespaces().Get(ctx, "only-in-b", metav1.GetOptions{}); err != nil {
		t.Errorf("Cluster b after stopping a: %v", err)
	}
}

func TestStartFailsFastWhenAProcessCannotRun(t *testing.T) {
	tests := map[string]struct {
		opts        Options
		wantProcess string
		wantInLog   string
	}{
		"etcd rejects a flag": {
			opts:        Options{ExtraArgs: map[string][]string{Etcd: {"--no-such-flag"}}},
			wantProcess: Etcd,
			wantInLog:   "no-such-flag",
		},
		"kube-scheduler rejects a flag, after the API server started": {
			opts:        Options{ExtraArgs: map[string][]string{KubeScheduler: {"--no-such-flag"}}},
			wantProcess: KubeScheduler,
			wantInLog:   "unknown flag: --no-such-flag",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.opts.Dir = t.TempDir()
			c, err := Start(t.Context(), tc.opts)
			if err == nil {
				_ = c.Stop()
				t.Fatal("Start succeeded, want an error")
			}
			var exit *ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("Start error is not an *ExitError: %v", err)
			}
			if diff := cmp.Diff(tc.wantProcess, exit.Process); diff != "" {
				t.Errorf("Process that failed (-want +got):\n%s", diff)
			}
			for _, want := range []string{tc.wantProcess, tc.wantInLog} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Error does not mention %q:\n%v", want, err)
				}
			}
			if left := processesUsing(t, tc.opts.Dir); len(left) > 0 {
				t.Errorf("Processes still running after a failed Start: %v", left)
			}
		})
	}

	t.Run("a port taken by another process is retried, then reported", func(t *testing.T) {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = taken.Close() }()
		port := taken.Addr().(*net.TCPAddr).Port
		var mu sync.Mutex
		var messages []string
		log := funcr.New(func(_, args string) {
			mu.Lock()
			defer mu.Unlock()
			messages = append(messages, args)
		}, funcr.Options{})
		dir := t.TempDir()
		// The flag comes after the harness's own --secure-port, so every attempt binds
		// the taken port.
		opts := Options{Dir: dir, ExtraArgs: map[string][]string{KubeAPIServer: {fmt.Sprintf("--secure-port=%d", port)}}}
		_, err = Start(logr.NewContext(t.Context(), log), opts)
		var exit *ExitError
		if !errors.As(err, &exit) || exit.Process != KubeAPIServer || !strings.Contains(exit.LogTail, "address already in use") {
			t.Fatalf("Start with the API server's port taken: got %v, want an *ExitError of %s saying the address is in use", err, KubeAPIServer)
		}
		mu.Lock()
		retries := 0
		for _, m := range messages {
			if strings.Contains(m, "retrying with other ports") {
				retries++
			}
		}
		mu.Unlock()
		if diff := cmp.Diff(startAttempts-1, retries); diff != "" {
			t.Errorf("Retries logged (-want +got):\n%s", diff)
		}
		if left := processesUsing(t, dir); len(left) > 0 {
			t.Errorf("Processes still running after a failed Start: %v", left)
		}
	})

	t.Run("missing binaries", func(t *testing.T) {
		empty := t.TempDir()
		_, err := Start(t.Context(), Options{KubeBin: empty, KwokBin: empty, Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "make tools") || !strings.Contains(err.Error(), filepath.Join(empty, KubeAPIServer)) {
			t.Fatalf("Start with no binaries: got error %v, want one naming %s and saying to run make tools", err, filepath.Join(empty, KubeAPIServer))
		}
	})
}
