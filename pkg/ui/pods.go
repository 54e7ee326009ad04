package ui

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/gates"
)

// Pod states as the page names them.
const (
	stateGated     = "Gated"
	statePending   = "Pending"
	stateRunning   = "Running"
	stateSucceeded = "Succeeded"
	stateFailed    = "Failed"
)

// podState is where a pod is on its way: gated by quotagate, pending (ungated, not yet
// running), running, or done.
func podState(p *corev1.Pod) string {
	switch {
	case p.Status.Phase == corev1.PodSucceeded:
		return stateSucceeded
	case p.Status.Phase == corev1.PodFailed:
		return stateFailed
	case gates.HasGate(p, v1alpha1.SchedulingGate):
		return stateGated
	case p.Status.Phase == corev1.PodRunning:
		return stateRunning
	}
	return statePending
}

// admittedAt is when quotagate ungated the pod, from its admitted-at annotation.
func admittedAt(p *corev1.Pod) (time.Time, bool) {
	s, ok := p.Annotations[v1alpha1.AdmittedAtAnnotation]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

// conditionTrueAt is when the pod's condition typ became True.
func conditionTrueAt(p *corev1.Pod, typ corev1.PodConditionType) (time.Time, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, !c.LastTransitionTime.IsZero()
		}
	}
	return time.Time{}, false
}

// finishedAt is when the last of the pod's containers terminated.
func finishedAt(p *corev1.Pod) (time.Time, bool) {
	var last time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	return last, !last.IsZero()
}

// historyStep is one step of a pod's way: gated, admitted, scheduled, running, done.
type historyStep struct {
	What   string
	At     time.Time
	Detail string
}

// podHistory is the pod's way so far, from its creation time, annotations, conditions
// and container states: what the API server holds, so it needs no history of its own.
func podHistory(p *corev1.Pod) []historyStep {
	steps := []historyStep{{What: "Created", At: p.CreationTimestamp.Time}}
	admitted, wasAdmitted := admittedAt(p)
	gated := gates.HasGate(p, v1alpha1.SchedulingGate)
	if gated || wasAdmitted {
		steps = append(steps, historyStep{What: "Gated", At: p.CreationTimestamp.Time, Detail: "held by quotagate (gate " + v1alpha1.SchedulingGate + ")"})
	}
	if wasAdmitted {
		by := p.Annotations[v1alpha1.AdmittedByAnnotation]
		if by == "" {
			by = "no budget (none covered it)"
		}
		steps = append(steps, historyStep{What: "Admitted", At: admitted,
			Detail: "gate removed after waiting " + duration.HumanDuration(admitted.Sub(p.CreationTimestamp.Time)) + "; charged to " + by})
	}
	if t, ok := conditionTrueAt(p, corev1.PodScheduled); ok {
		steps = append(steps, historyStep{What: "Scheduled", At: t, Detail: "to node " + p.Spec.NodeName})
	}
	if p.Status.StartTime != nil && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
		at := p.Status.StartTime.Time
		if t, ok := conditionTrueAt(p, corev1.PodReady); ok {
			at = t
		}
		steps = append(steps, historyStep{What: "Running", At: at})
	}
	if s := podState(p); s == stateSucceeded || s == stateFailed {
		at, _ := finishedAt(p)
		steps = append(steps, historyStep{What: s, At: at})
	}
	slices.SortStableFunc(steps, func(a, b historyStep) int {
		if a.At.IsZero() || b.At.IsZero() {
			return 0
		}
		return a.At.Compare(b.At)
	})
	return steps
}

// podRow is a pod in the pod list.
type podRow struct {
	Namespace, Name, State string
	Priority               int32
	Age                    string
	AdmittedBy             string
}

// Link is the pod's page, a link that can be shared.
func (r podRow) Link() string { return podLink(r.Namespace, r.Name) }

// podPageSize is how many pods one page of a list shows: the page stays small and
// fast whatever the number of pods (the queue is paged by the visibility API itself).
const podPageSize = 100

// podList is one page of the pods whose namespace is ns (any when "") and whose name
// contains q, sorted by namespace and name, and how many matched.
func podList(pods []*corev1.Pod, ns, q string, page int, now time.Time) (rows []podRow, total int) {
	q = strings.ToLower(q)
	matched := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if (ns == "" || p.Namespace == ns) && strings.Contains(strings.ToLower(p.Name), q) {
			matched = append(matched, p)
		}
	}
	slices.SortFunc(matched, func(a, b *corev1.Pod) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	from := min(page*podPageSize, len(matched))
	to := min(from+podPageSize, len(matched))
	rows = make([]podRow, 0, to-from)
	for _, p := range matched[from:to] {
		r := podRow{Namespace: p.Namespace, Name: p.Name, State: podState(p),
			Age: duration.HumanDuration(now.Sub(p.CreationTimestamp.Time)), AdmittedBy: p.Annotations[v1alpha1.AdmittedByAnnotation]}
		if p.Spec.Priority != nil {
			r.Priority = *p.Spec.Priority
		}
		rows = append(rows, r)
	}
	return rows, len(matched)
}
