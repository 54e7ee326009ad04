package app

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// BenchmarkQueueOf10kPods measures what the plugin does with a large snapshot: decode
// the manager's JSON (every budget; the plugin filters on its side) and render one
// budget's queue of 10,000 gated pods.
func BenchmarkQueueOf10kPods(b *testing.B) {
	const n = 10000
	q := quota.NewAdmissionQueue(quota.WithClock(clocktesting.NewFakeClock(now)))
	q.SetNamespace("team-a", labels.Set{v1alpha1.EnabledLabel: "true"})
	key := quota.BudgetKey{Namespace: "team-a", Name: "team-a"}
	q.UpsertBudget(quota.Budget{Key: key, Hard: parseList("cpu=1")})
	for i := range n {
		p := makePod("team-a", fmt.Sprintf("p-%05d", i)).Priority(int32(i % 7)).Created(i).Req("cpu=2").Obj()
		q.UpsertPod(quota.NewPod(p, v1alpha1.SchedulingGate, now))
	}
	q.Admit()
	raw, err := json.Marshal(q.Reader().Snapshot())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		snap, err := decodeSnapshot(raw, "bench")
		if err != nil {
			b.Fatal(err)
		}
		bq := newSnapshotView(snap).byBudget[key]
		if len(bq.Pods) != n {
			b.Fatalf("queue has %d pods, want %d", len(bq.Pods), n)
		}
		if err := printQueue(io.Discard, newOutputFlags(true, formatWide), nil, pendingPodList(bq, now), now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(raw))/n, "snapshot-bytes/pod")
}
