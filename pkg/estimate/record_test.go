package estimate

import (
	"fmt"
	"testing"
	"time"

	"github.com/quotagate/quotagate/pkg/quota"
)

// A budget's track record gives the median error and the share within range of its
// last admissions; a deleted budget's record is gone, and its place is free for another
// once every place was taken.
func TestTrackRecordForgetsDeletedBudgets(t *testing.T) {
	r := NewTrackRecord(time.Unix(0, 0))
	team := quota.BudgetKey{Namespace: "team-a", Name: "quota"}
	for i, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		r.Add(team, d, i != 0)
	}
	got, ok := r.Of(team)
	if !ok || got.Pods != 3 || got.MedianError != 2*time.Second || got.Within != 2 {
		t.Fatalf("team-a/quota's record: %+v, %v; want 3 pods, median error 2s, 2 within range", got, ok)
	}

	for i := range recordBudgets - 1 {
		r.Add(quota.BudgetKey{Namespace: fmt.Sprintf("ns-%d", i), Name: "b"}, time.Second, true)
	}
	late := quota.BudgetKey{Namespace: "late", Name: "b"}
	r.Add(late, time.Second, true)
	if _, ok := r.Of(late); ok {
		t.Fatalf("a record kept beyond the %d budgets the record holds", recordBudgets)
	}

	r.Forget(team)
	if _, ok := r.Of(team); ok {
		t.Error("the deleted budget team-a/quota still has a record")
	}
	r.Add(late, time.Second, true)
	if got, ok := r.Of(late); !ok || got.Pods != 1 {
		t.Errorf("after a budget was deleted, a new one's record is %+v, %v; want 1 pod", got, ok)
	}
}
