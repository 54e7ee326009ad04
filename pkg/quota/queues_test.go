package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// One budget's queues alone: moves between them, the active head, admission order over
// all of them, and the StrictFIFO head.
func TestQueues(t *testing.T) {
	var qs queues
	qs.init(nil)
	entries := map[string]*entry{}
	add := func(name string, prio int32, created int) {
		p := &podState{pod: makePod(name).Priority(prio).Created(created).Pod()}
		p.order = ownKey(&p.pod)
		entries[name] = &entry{pod: p, index: -1}
	}
	add("low-old", 0, 0)
	add("low-new", 0, 5)
	add("high", 10, 9)
	add("huge", 0, 1) // parked: never fits
	names := func(es []*entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.pod.pod.Name)
		}
		return out
	}
	head := func() string {
		if e := qs.activeHead(); e != nil {
			return e.pod.pod.Name
		}
		return ""
	}
	for i, s := range []struct {
		pod         string
		to          queueKind
		wantChanged bool
		wantHead    string
		wantStrict  string
	}{
		{"low-new", queueActive, true, "low-new", "low-new"},
		{"low-old", queueActive, true, "low-old", "low-old"},
		{"huge", queueParked, false, "low-old", "low-old"}, // parked pods never block
		{"high", queueBackoff, false, "low-old", "high"},   // the StrictFIFO head is in backoff
		{"low-old", queueInadmissible, true, "low-new", "high"},
		{"high", queueActive, true, "high", "high"},
		{"high", queueActive, false, "high", "high"}, // already there: no move
		{"high", queueNone, true, "low-new", "low-old"},
	} {
		if got := qs.move(entries[s.pod], s.to); got != s.wantChanged {
			t.Errorf("step %d: move(%s, %v) reported head changed = %v, want %v", i, s.pod, s.to, got, s.wantChanged)
		}
		if got := head(); got != s.wantHead {
			t.Errorf("step %d: active head %q, want %q", i, got, s.wantHead)
		}
		if got := qs.strictHead(); got == nil || got.pod.pod.Name != s.wantStrict {
			t.Errorf("step %d: StrictFIFO head %v, want %s", i, got, s.wantStrict)
		}
	}
	if got := qs.gated(); got != 3 {
		t.Errorf("gated = %d, want 3 (high left the queues)", got)
	}
	if diff := cmp.Diff([]string{"low-old", "huge", "low-new"}, names(qs.inOrder())); diff != "" {
		t.Errorf("inOrder (-want +got):\n%s", diff)
	}
	if e := entries["high"]; e.kind != queueNone || e.index != -1 {
		t.Errorf("an entry out of every queue has kind %v and index %d, want none and -1", e.kind, e.index)
	}
}
