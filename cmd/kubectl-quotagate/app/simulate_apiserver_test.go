package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota/controller"
	"github.com/quotagate/quotagate/pkg/visibility"
	"github.com/quotagate/quotagate/test/localcluster"
)

// trainJob is a Job of 3 parallel pods of 1 CPU, each declaring it runs 10 minutes.
const trainJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  parallelism: 3
  completions: 6
  template:
    metadata:
      annotations:
        quotagate.io/expected-duration: 10m
    spec:
      restartPolicy: Never
      containers:
      - name: train
        image: registry.invalid/train
        resources:
          requests:
            cpu: "1"
`

// TestSimulateOnRealAPIServer runs kubectl quotagate simulate -f job.yaml against a
// real manager (its caches, its estimator, its visibility server) behind a real
// kube-apiserver's aggregation layer: Budget team-a (2 CPUs, empty) would admit two
// of the Job's three pods at once and hold the third first in its queue until one of
// them ends, 10 minutes on. Nothing is created. A user with view only is told what
// the command needs; a CronJob is not read; a Job of 1001 parallel pods is refused
// with the manager's limit named.
func TestSimulateOnRealAPIServer(t *testing.T) {
	dir := t.TempDir()
	flags, caPEM := aggregationCerts(t, dir)
	cluster := localcluster.StartForTest(t, localcluster.Options{Nodes: 1, ExtraArgs: map[string][]string{localcluster.KubeAPIServer: flags}})
	cfg := cluster.Config()
	root, err := localcluster.RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	if err := testbed.InstallCRDs(cfg, root); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	q, mgr, err := controller.NewManager(cfg, controller.DefaultOptions(), ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	port := testbed.FreePort(t)
	srv, err := visibility.New(visibility.Options{BindAddress: net.IPv4(127, 0, 0, 1), Port: port, CertDir: filepath.Join(dir, "certs"), Kubeconfig: cluster.KubeconfigPath(),
		Estimates: q, Simulator: q}, q.Queues(), alwaysLeading{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(srv); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	create(t, admin,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}},
		namespace("team-a", true),
		budget("team-a", "team-a", "requests.cpu=2", ""),
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: visibilityService},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
				Ports: []corev1.ServicePort{{Name: "visibility", Port: int32(port)}}},
		},
		// The chart's role, aggregated to edit; the tenant has edit in team-a, the
		// viewer view.
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "quotagate-pod-simulator", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{visv1.GroupName}, Resources: []string{visv1.ResourcePodSimulations}, Verbs: []string{"create"}}},
		},
		roleBinding("team-a", "edit", "tenant"),
		roleBinding("team-a", "view", "viewer"),
	)
	registerAPIService(t, cfg, port, caPEM)
	job := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(job, []byte(trainJob), 0o600); err != nil {
		t.Fatal(err)
	}
	as := func(user string, args ...string) []string {
		return append([]string{"--kubeconfig", cluster.KubeconfigPath(), "--as", user}, args...)
	}

	var out, errOut string
	testbed.Poll(t, pollTimeout, "the tenant's simulation to see Budget team-a", func(context.Context) (bool, error) {
		var err error
		out, errOut, err = runReal(t, as("tenant", "simulate", "-f", job, "-n", "team-a")...)
		return err == nil && strings.Contains(out, "1/1"), testbed.NotYet(err)
	})
	t.Logf("kubectl quotagate simulate -f job.yaml -n team-a (as tenant):\n%s", out)
	want := `3 pods of Job team-a/train, if created now (nothing was created):
POD                 BUDGETS                POSITION   STATUS              ETA   RANGE
train-simulated-0   Budget team-a/team-a   -          Admitted            now   -
train-simulated-1   Budget team-a/team-a   -          Admitted            now   -
train-simulated-2   Budget team-a/team-a   1/1        InsufficientQuota   10m   -
train-simulated-2 waits: `
	if !strings.HasPrefix(out, want) || !strings.Contains(out, "requests.cpu: 1 requested, 0 free in Budget team-a/team-a") || errOut != "" {
		t.Errorf("simulate -f job.yaml: want the prefix\n%s\nand the reason, got\n%s\nstderr: %s", want, out, errOut)
	}

	out, _, err = runReal(t, as("tenant", "simulate", "-f", job, "-n", "team-a", "-o", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	var sim visv1.PodSimulation
	if err := json.Unmarshal([]byte(out), &sim); err != nil {
		t.Fatalf("decoding -o json: %v\n%s", err, out)
	}
	var got []string
	for _, p := range sim.Status.Pods {
		got = append(got, p.Name+" "+p.ReasonCode)
	}
	if diff := cmp.Diff([]string{"train-simulated-0 Fits", "train-simulated-1 Fits", "train-simulated-2 InsufficientQuota"}, got); diff != "" || sim.Kind != visv1.KindPodSimulation || sim.Spec.Count != 3 {
		t.Errorf("simulate -o json: kind %q, count %d, pods (-want +got):\n%s", sim.Kind, sim.Spec.Count, diff)
	}
	var pods corev1.PodList
	if err := admin.List(t.Context(), &pods, client.InNamespace("team-a")); err != nil || len(pods.Items) != 0 {
		t.Errorf("team-a holds %d pods after the simulations (%v), want none", len(pods.Items), err)
	}

	// Twelve pods created at one moment wait in the order they are listed: two at a
	// time, each pair 10 minutes after the one before (the manager orders pods created
	// together by UID; sweep-simulated-10 and -11 used to come before -2).
	sweep := filepath.Join(dir, "sweep.yaml")
	if err := os.WriteFile(sweep, []byte(strings.NewReplacer("name: train\n", "name: sweep\n", "parallelism: 3\n  completions: 6", "parallelism: 12\n  completions: 12").Replace(trainJob)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err = runReal(t, as("tenant", "simulate", "-f", sweep, "-n", "team-a", "-o", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	var swept visv1.PodSimulation
	if err := json.Unmarshal([]byte(out), &swept); err != nil {
		t.Fatalf("decoding -o json: %v\n%s", err, out)
	}
	var starts, wantStarts []string
	for i, p := range swept.Status.Pods {
		wantStarts = append(wantStarts, fmt.Sprintf("%s %s", p.Name, time.Duration(i/2)*10*time.Minute))
		start := "unknown"
		if e := p.EstimatedStart; e != nil && e.Median != nil {
			start = e.Median.Sub(swept.CreationTimestamp.Time).Round(time.Minute).String()
		}
		starts = append(starts, p.Name+" "+start)
	}
	if diff := cmp.Diff(wantStarts, starts); diff != "" || len(starts) != 12 {
		t.Errorf("simulate -f sweep.yaml: the pods' median starts after the answer's creation (-want +got):\n%s", diff)
	}

	_, _, err = runReal(t, as("viewer", "simulate", "-f", job, "-n", "team-a")...)
	if err == nil || !strings.Contains(err.Error(), "you may not simulate pods in namespace team-a: it needs create on podsimulations") {
		t.Errorf("simulate as a viewer: %v", err)
	}
	elsewhere := filepath.Join(dir, "job-team-b.yaml")
	if err := os.WriteFile(elsewhere, []byte(strings.Replace(trainJob, "  name: train\n", "  name: train\n  namespace: team-b\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = runReal(t, as("tenant", "simulate", "-f", elsewhere, "-n", "team-a")...)
	if err == nil || !strings.Contains(err.Error(), `the namespace from the provided object "team-b" does not match the namespace "team-a"`) {
		t.Errorf("simulate -f job-team-b.yaml -n team-a: %v", err)
	}
	cron := filepath.Join(dir, "cronjob.yaml")
	if err := os.WriteFile(cron, []byte("apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: nightly\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = runReal(t, as("tenant", "simulate", "-f", cron, "-n", "team-a")...)
	if err == nil || !strings.Contains(err.Error(), "simulate reads a Pod, Job, Deployment, ReplicaSet or StatefulSet, not a CronJob") {
		t.Errorf("simulate -f cronjob.yaml: %v", err)
	}
	huge := filepath.Join(dir, "job-huge.yaml")
	if err := os.WriteFile(huge, []byte(strings.Replace(trainJob, "parallelism: 3\n  completions: 6", "parallelism: 1001\n  completions: 2000", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = runReal(t, as("tenant", "simulate", "-f", huge, "-n", "team-a")...)
	if err == nil || !strings.Contains(err.Error(), "the manager simulates no what-if this large") ||
		!strings.Contains(err.Error(), "a simulation of 1001 pods exceeds the limit of 1000 pods (--simulation-max-pods)") {
		t.Errorf("simulate -f job-huge.yaml (parallelism 1001): %v", err)
	}
}
