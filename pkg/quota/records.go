package quota

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// Record is a running pod that no manager admitted with a record of its labels: one
// created before its namespace opted in, ungated by someone else, or admitted by a
// manager that wrote no admitted-labels annotation. The core charges it by the labels
// it was first seen with (its charge labels); written into its admitted-labels
// annotation, they are what a manager that starts after this one charges it by, so a
// tenant who relabels such a pod moves its charge neither now nor after a restart or a
// failover (docs/guarantees.md, "What a tenant may change after admission").
type Record struct {
	Pod PodRef
	// Labels are the pod's charge labels, for its admitted-labels annotation.
	Labels map[string]string
}

// records keeps the running pods whose charge labels are not written on them yet,
// until the leader takes them to write.
type records map[types.UID]*podState

// note keeps a running pod again unless it shows its admitted-labels annotation by now.
func (r records) note(p *podState) {
	if _, ok := p.pod.admittedLabels(); !ok {
		r[p.pod.UID] = p
	}
}

// take returns the records, sorted by UID, and forgets them.
func (r records) take() []Record {
	if len(r) == 0 {
		return nil
	}
	out := make([]Record, 0, len(r))
	for _, uid := range slices.Sorted(maps.Keys(r)) {
		p := r[uid]
		out = append(out, Record{Pod: p.pod.PodRef, Labels: maps.Clone(p.charge.coverLabels())})
	}
	clear(r)
	return out
}

// TakeRecords returns the running pods whose charge labels are to be written into
// their admitted-labels annotation, and forgets them: a write that fails is handed
// back with RecordAgain. A standby's core keeps them until it leads.
func (q *AdmissionQueue) TakeRecords() []Record {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.place.takeRecords()
}

// RecordAgain hands back a record whose write failed: it is taken again unless the pod
// has ended, or shows its annotation by now.
func (q *AdmissionQueue) RecordAgain(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.place.recordAgain(uid)
}
