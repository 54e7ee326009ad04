package app

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
)

// Each output format of one budget's queue, read from the visibility API.
func TestQueueOutputFormats(t *testing.T) {
	w := teamsWorld(t)
	tests := map[string]struct {
		args []string
		want string
	}{
		"wide": {
			args: []string{"queue", "team-a/team-a", "-o", "wide"},
			want: `Budget team-a/team-a: Open, BestEffortFIFO, 3 gated
POSITION   POD              PRIORITY   REQUESTS   WAITING   QUEUE          RETRY IN   GROUP   UID              REASON CODE          ETA   REASON
1          team-a/huge      0          cpu=6      9m30s     parked         -          -       team-a-huge      RequestsExceedHard   -     requests.cpu: 6 requested, more than the 4 hard of Budget team-a/team-a: it can never fit
2          team-a/train-1   0          cpu=2      8m        inadmissible   -          -       team-a-train-1   InsufficientQuota    -     requests.cpu: 2 requested, 0 free in Budget team-a/team-a; position 2 of 3
3          team-a/train-3   0          cpu=1      6m        inadmissible   -          -       team-a-train-3   InsufficientQuota    -     requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3
`,
		},
		"no headers": {
			args: []string{"queue", "team-a/team-a", "--no-headers"},
			want: `1     team-a/huge      0     cpu=6   9m30s   parked         -     requests.cpu: 6 requested, more than the 4 hard of Budget team-a/team-a: it can never fit
2     team-a/train-1   0     cpu=2   8m      inadmissible   -     requests.cpu: 2 requested, 0 free in Budget team-a/team-a; position 2 of 3
3     team-a/train-3   0     cpu=1   6m      inadmissible   -     requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3
`,
		},
		"wide without headers": {
			args: []string{"queue", "team-b/team-b", "-o", "wide", "--no-headers"},
			want: "1     team-b/batch-3   0     cpu=2   8m20s   inadmissible   -     -     team-b-batch-3   InsufficientQuota   -     requests.cpu: 2 requested, 0 free in Budget team-b/team-b; position 1 of 1\n",
		},
		"name: a Budget's pods are in its namespace": {
			args: []string{"queue", "team-a", "-n", "team-a", "-o", "name"},
			want: "pod/huge\npod/train-1\npod/train-3\n",
		},
		"name: a ClusterBudget's pods are namespace-qualified": {
			args: []string{"queue", "clusterbudget/org", "-o", "name"},
			want: "team-a/pod/huge\nteam-b/pod/batch-3\nteam-a/pod/train-1\nteam-a/pod/train-3\n",
		},
		"jsonpath": {
			args: []string{"queue", "team-b/team-b", "-o", "jsonpath={.total} {.items[0].name} {.items[0].reasonCode}"},
			want: "1 batch-3 InsufficientQuota",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := run(t, w.queuesEnv(t, nil), tc.args...)
			if err != nil {
				t.Fatalf("queue: %v\n%s", err, errOut)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

// -o yaml is the same PendingPodList as -o json.
func TestQueueYAML(t *testing.T) {
	w := teamsWorld(t)
	e := w.queuesEnv(t, nil)
	var fromJSON, fromYAML visv1.PendingPodList
	out, _, err := run(t, e, "queue", "clusterbudget/org", "-o", "json")
	if err != nil {
		t.Fatalf("queue -o json: %v", err)
	}
	if err := json.Unmarshal([]byte(out), &fromJSON); err != nil {
		t.Fatalf("decoding -o json: %v\n%s", err, out)
	}
	out, _, err = run(t, e, "queue", "clusterbudget/org", "-o", "yaml")
	if err != nil {
		t.Fatalf("queue -o yaml: %v", err)
	}
	if err := yaml.UnmarshalStrict([]byte(out), &fromYAML); err != nil {
		t.Fatalf("decoding -o yaml: %v\n%s", err, out)
	}
	if diff := cmp.Diff(fromJSON, fromYAML); diff != "" {
		t.Errorf("-o yaml differs from -o json (-json +yaml):\n%s", diff)
	}
	if fromYAML.Kind != visv1.KindPendingPodList || fromYAML.BudgetKind != "ClusterBudget" || len(fromYAML.Items) != 4 {
		t.Errorf("-o yaml: kind %q, budgetKind %q, %d items; want PendingPodList, ClusterBudget, 4", fromYAML.Kind, fromYAML.BudgetKind, len(fromYAML.Items))
	}
}

// The wide columns of pods in a group and in backoff, and an empty queue, rendered
// from PendingPodLists as the API answers them.
func TestQueueTable(t *testing.T) {
	retryAt := metav1.NewTime(now.Add(45 * time.Second))
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	list := &visv1.PendingPodList{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "gpus"}, BudgetKind: "Budget", State: "Open", Strategy: "StrictFIFO", Total: 2,
		Items: []visv1.PendingPod{
			{Namespace: "ml", Name: "worker-0", UID: "u0", Position: 1, Priority: 10, Group: "trainer", Requests: parseList("requests.nvidia.com/gpu=4"),
				CreationTimestamp: metav1.NewTime(t0), WaitingSeconds: 600, Queue: visv1.QueueBackoff, RetryAt: &retryAt, ReasonCode: "UngateFailed", Reason: "the ungate patch failed: conflict; retrying"},
			{Namespace: "ml", Name: "worker-1", UID: "u1", Position: 2, Priority: 10, Group: "trainer", Requests: parseList("requests.nvidia.com/gpu=4"),
				CreationTimestamp: metav1.NewTime(t0), WaitingSeconds: 600, Queue: visv1.QueueInadmissible, ReasonCode: "InsufficientQuota", Reason: "requests.nvidia.com/gpu: 4 requested, 0 free in Budget ml/gpus"},
		},
	}
	estimated := &visv1.PendingPodList{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "gpus"}, BudgetKind: "Budget", State: "Open", Strategy: "StrictFIFO", Total: 3,
	}
	for i, e := range []*visv1.EstimatedStart{
		{Median: at(4 * time.Minute), Low: at(2 * time.Minute), High: at(9 * time.Minute), Ends: 3, Samples: 5},
		{Median: at(150 * time.Minute), Low: at(150 * time.Minute), High: at(150 * time.Minute), Ends: 12},
		{Unknown: "NoHistory", Message: "it waits for quota held by pods with no expected end"},
	} {
		estimated.Items = append(estimated.Items, visv1.PendingPod{
			Namespace: "ml", Name: fmt.Sprintf("worker-%d", i), Position: int64(i + 1), Priority: 10, Requests: parseList("requests.nvidia.com/gpu=4"),
			CreationTimestamp: metav1.NewTime(t0), WaitingSeconds: 600, Queue: visv1.QueueInadmissible, ReasonCode: "InsufficientQuota",
			Reason: "requests.nvidia.com/gpu: 4 requested, 0 free in Budget ml/gpus", EstimatedStart: e,
		})
	}
	empty := &visv1.PendingPodList{ObjectMeta: metav1.ObjectMeta{Name: "org"}, BudgetKind: "ClusterBudget", State: "Closed", Strategy: "BestEffortFIFO", Items: []visv1.PendingPod{}}
	tests := map[string]struct {
		list   *visv1.PendingPodList
		format string
		noHead bool
		want   string
	}{
		"default: the group follows the pod": {list: list, want: `Budget ml/gpus: Open, StrictFIFO, 2 gated
POSITION   POD                           PRIORITY   REQUESTS           WAITING   QUEUE          ETA   REASON
1          ml/worker-0 (group trainer)   10         nvidia.com/gpu=4   10m       backoff        -     the ungate patch failed: conflict; retrying
2          ml/worker-1 (group trainer)   10         nvidia.com/gpu=4   10m       inadmissible   -     requests.nvidia.com/gpu: 4 requested, 0 free in Budget ml/gpus
`},
		"wide: group, retry and UID columns": {list: list, format: "wide", want: `Budget ml/gpus: Open, StrictFIFO, 2 gated
POSITION   POD           PRIORITY   REQUESTS           WAITING   QUEUE          RETRY IN   GROUP     UID   REASON CODE         ETA   REASON
1          ml/worker-0   10         nvidia.com/gpu=4   10m       backoff        45s        trainer   u0    UngateFailed        -     the ungate patch failed: conflict; retrying
2          ml/worker-1   10         nvidia.com/gpu=4   10m       inadmissible   -          trainer   u1    InsufficientQuota   -     requests.nvidia.com/gpu: 4 requested, 0 free in Budget ml/gpus
`},
		"ETA: the median of each pod's estimate, or unknown": {list: estimated, want: `Budget ml/gpus: Open, StrictFIFO, 3 gated
POSITION   POD           PRIORITY   REQUESTS           WAITING   QUEUE          ETA       REASON
1          ml/worker-0   10         nvidia.com/gpu=4   10m       inadmissible   4m        requests.nvidia.com/gpu: 4 requested, 0 free in Budget ml/gpus
2          ml/worker-1   10         nvidia.com/gpu=4   10m       inadmissible   150m      requests.nvidia.com/gpu: 4 requested, 0 free in Budget ml/gpus
3          ml/worker-2   10         nvidia.com/gpu=4   10m       inadmissible   unknown   requests.nvidia.com/gpu: 4 requested, 0 free in Budget ml/gpus
`},
		"an empty queue has its heading only":     {list: empty, want: "ClusterBudget org: Closed, BestEffortFIFO, 0 gated\n"},
		"an empty queue without headers is empty": {list: empty, noHead: true, want: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out := newOutputFlags(true, formatWide)
			out.format, out.noHeaders = tc.format, tc.noHead
			var b strings.Builder
			if err := printQueue(&b, out, nil, tc.list, now); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

// queue -w prints a pod again when its estimate moves, and a pod that left the queue
// with no ETA: its estimate was of the wait it no longer has.
func TestQueueWatchRowsWithEstimates(t *testing.T) {
	w := teamsWorld(t)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	item := func(name string, position int64, median time.Duration) visv1.PendingPod {
		return visv1.PendingPod{Namespace: "team-a", Name: name, UID: "team-a-" + name, Position: position, Requests: parseList("requests.cpu=1"),
			CreationTimestamp: metav1.NewTime(t0), WaitingSeconds: 60, Queue: visv1.QueueInadmissible, ReasonCode: "InsufficientQuota", Reason: "waits",
			EstimatedStart: &visv1.EstimatedStart{Median: at(median), Low: at(median), High: at(median), Ends: 1}}
	}
	list := func(items ...visv1.PendingPod) *visv1.PendingPodList {
		return &visv1.PendingPodList{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "team-a"}, BudgetKind: "Budget", Items: items}
	}
	// train-hi was admitted (the world's pod is ungated); train-3's estimate moved.
	before := list(item("train-hi", 1, 2*time.Minute), item("train-3", 2, 4*time.Minute))
	after := list(item("train-3", 1, 9*time.Minute))
	out := newOutputFlags(true, formatWide)
	out.noHeaders = true
	var b strings.Builder
	if err := out.printTable(&b, queueColumns(false), queueRows(changedPods(t.Context(), w.client, before, after), false, false, now)); err != nil {
		t.Fatal(err)
	}
	want := `1     team-a/train-3    0     cpu=1   60s   inadmissible   9m    waits
-     team-a/train-hi   0     cpu=1   -     -              -     admitted
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}
