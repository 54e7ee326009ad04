package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
)

// TestWorkloadOf: the pods simulate asks about for each kind it reads, and the
// errors for what it does not read.
func TestWorkloadOf(t *testing.T) {
	const spec = `
    spec:
      containers: [{name: c, image: app}]`
	type got struct {
		Kind, Name, Namespace, GenerateName, Owner string
		Count                                      int32
	}
	for name, tc := range map[string]struct {
		file string
		want got
		err  string
	}{
		"a Pod is itself": {
			file: "apiVersion: v1\nkind: Pod\nmetadata: {name: solo, namespace: team-a}\nspec:\n  containers: [{name: c, image: app}]\n",
			want: got{Kind: "Pod", Name: "solo", Namespace: "team-a", Count: 1},
		},
		"a Job: parallelism bounded by completions": {
			file: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train}\nspec:\n  parallelism: 5\n  completions: 2\n  template:" + spec + "\n",
			want: got{Kind: "Job", Name: "train", GenerateName: "train-", Owner: "Job/train", Count: 2},
		},
		"a Job without parallelism: one pod": {
			file: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: once}\nspec:\n  template:" + spec + "\n",
			want: got{Kind: "Job", Name: "once", GenerateName: "once-", Owner: "Job/once", Count: 1},
		},
		"a Deployment: replicas, owned by its ReplicaSet": {
			file: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 4\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}" + spec + "\n",
			want: got{Kind: "Deployment", Name: "web", GenerateName: "web-", Owner: "ReplicaSet/web", Count: 4},
		},
		"a StatefulSet without replicas: one pod": {
			file: "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  selector: {matchLabels: {app: db}}\n  template:" + spec + "\n",
			want: got{Kind: "StatefulSet", Name: "db", GenerateName: "db-", Owner: "StatefulSet/db", Count: 1},
		},
		"JSON": {
			file: `{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"}, "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}}`,
			want: got{Kind: "ReplicaSet", Name: "rs", GenerateName: "rs-", Owner: "ReplicaSet/rs", Count: 2},
		},
		"a kind it does not read":    {file: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", err: "simulate reads a Pod, Job, Deployment, ReplicaSet or StatefulSet, not a ConfigMap"},
		"a kind no scheme knows":     {file: "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\n", err: "simulate reads a Pod, Job, Deployment, ReplicaSet or StatefulSet, not a CronJob"},
		"two objects":                {file: "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\n", err: "holds 2 objects; simulate reads one"},
		"zero replicas":              {file: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: idle}\nspec:\n  replicas: 0\n  template:" + spec + "\n", err: "Deployment idle asks for 0 pods: nothing to simulate"},
		"not Kubernetes YAML at all": {file: "just: [text\n", err: "decoding"},
	} {
		t.Run(name, func(t *testing.T) {
			w, err := workloadOf([]byte(tc.file))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g := got{Kind: w.kind, Name: w.name, Namespace: w.namespace, GenerateName: w.template.GenerateName, Count: w.count}
			if refs := w.template.OwnerReferences; len(refs) == 1 {
				g.Owner = refs[0].Kind + "/" + refs[0].Name
			}
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("workload (-want +got):\n%s", diff)
			}
			if len(w.template.Spec.Containers) != 1 {
				t.Errorf("the template has %d containers, want the file's 1", len(w.template.Spec.Containers))
			}
		})
	}
}

// simulate -o wide, as docs/kubectl-plugin.md shows it: the default table with each
// pod's priority and requests; any other format is refused with the list of formats.
func TestSimulateWide(t *testing.T) {
	created := metav1.NewTime(now)
	median := metav1.NewTime(now.Add(10 * time.Minute))
	answer := &visv1.PodSimulation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", CreationTimestamp: created},
		Status: visv1.PodSimulationStatus{Pods: []visv1.SimulatedPod{
			{Name: "train-simulated-0", Priority: 100, Requests: parseList("requests.cpu=1"), Admitted: true, ReasonCode: "Fits",
				Budgets:        []visv1.BudgetPlace{{BudgetKind: "Budget", Namespace: "team-a", Name: "team-a"}},
				EstimatedStart: &visv1.EstimatedStart{Median: &created, Low: &created, High: &created}},
			{Name: "train-simulated-1", Priority: 100, Requests: parseList("requests.cpu=1"), ReasonCode: "InsufficientQuota",
				Reason:         "requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 1 of 1",
				Budgets:        []visv1.BudgetPlace{{BudgetKind: "Budget", Namespace: "team-a", Name: "team-a", Position: 1, Total: 1}},
				EstimatedStart: &visv1.EstimatedStart{Median: &median, Low: &median, High: &median}},
		}},
	}
	file := filepath.Join(t.TempDir(), "job.yaml")
	job := "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train, namespace: team-a}\nspec:\n  parallelism: 2\n  template:\n    spec:\n      containers: [{name: c, image: app}]\n"
	if err := os.WriteFile(file, []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	e := teamsWorld(t).defaultInstall()
	var asked int32
	e.simulations = func() (simulationSource, error) {
		return func(_ context.Context, ns string, sim *visv1.PodSimulation) (*visv1.PodSimulation, error) {
			asked = sim.Spec.Count
			return answer, nil
		}, nil
	}
	out, errOut, err := run(t, e, "simulate", "-f", file, "-o", "wide")
	if err != nil {
		t.Fatalf("simulate -o wide: %v\n%s", err, errOut)
	}
	want := `2 pods of Job team-a/train, if created now (nothing was created):
POD                 BUDGETS                POSITION   STATUS              ETA   RANGE   PRIORITY   REQUESTS
train-simulated-0   Budget team-a/team-a   -          Admitted            now   -       100        cpu=1
train-simulated-1   Budget team-a/team-a   1/1        InsufficientQuota   10m   -       100        cpu=1
train-simulated-1 waits: requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 1 of 1
`
	if diff := cmp.Diff(want, out); diff != "" || errOut != "" || asked != 2 {
		t.Errorf("simulate -o wide asked for %d pods (-want +got):\n%s\nstderr: %s", asked, diff, errOut)
	}
	if _, _, err := run(t, e, "simulate", "-f", file, "-o", "tall"); err == nil || !strings.Contains(err.Error(), "wide") {
		t.Errorf("simulate -o tall: %v, want the allowed formats, wide among them", err)
	}
}
