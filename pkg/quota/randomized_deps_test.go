package quota

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/depend"
)

// The model's dependencies (docs/start-control.md): a pod of the world may wait for
// Jobs d0, d1 and d2 of its namespace, or name another namespace's (refused). A Job
// does not exist at first; a move of the world makes one complete (mostly) or fail,
// for good, and gives the core again every pod that waits for it, as the manager does
// (resolved by ResolveDependencies against the world's Jobs, not by the manager's
// index). The checks: no pod is admitted while a Job it waits for has not completed
// (admitAndCheck); a pod that waits for a failed Job, or names another namespace, is
// never admitted (neverAdmissible); in a calm world every Job still running completes,
// and every pod that waited for them is admitted (calmDown).

// worldJobs is how many Jobs each namespace of the world may have.
const worldJobs = 3

// randomWaitFor makes a pod wait for one or two of its namespace's Jobs, or, one time
// in ten, for another namespace's.
func (w *world) randomWaitFor(b *podBuilder) {
	if w.rng.IntN(10) == 0 {
		b.Annotation(v1alpha1.WaitForAnnotation, "ns-a/job/d0")
		return
	}
	var names []string
	for range 1 + w.rng.IntN(2) {
		names = append(names, fmt.Sprintf("job/d%d", w.rng.IntN(worldJobs)))
	}
	b.Annotation(v1alpha1.WaitForAnnotation, strings.Join(names, ","))
}

// jobKey names a Job of the world.
func jobKey(ns, name string) string { return ns + "/" + name }

// withDependencies is the view p resolved against the world's Jobs.
func (w *world) withDependencies(p Pod) Pod {
	return ResolveDependencies(p, func(d depend.Dependency) depend.Status {
		switch w.jobs[jobKey(p.Namespace, d.Name)] {
		case depend.Ready:
			return depend.Status{State: depend.Ready}
		case depend.Failed:
			return depend.Status{State: depend.Failed, Message: fmt.Sprintf("%s failed", d)}
		}
		return depend.Missing(d)
	}, "")
}

// dependenciesOf reads what a pod of the world waits for: its Jobs' names, and false
// when it names another namespace's.
func dependenciesOf(pod *corev1.Pod) ([]string, bool) {
	v, ok := pod.Annotations[v1alpha1.WaitForAnnotation]
	if !ok {
		return nil, true
	}
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		parts := strings.Split(item, "/")
		if len(parts) != 2 {
			return nil, false
		}
		out = append(out, parts[1])
	}
	return out, true
}

// dependenciesReady says whether every Job the pod waits for completed, and whether
// one never will (failed, or not of its namespace).
func (w *world) dependenciesReady(pod *corev1.Pod) (ready, never bool) {
	names, valid := dependenciesOf(pod)
	if !valid {
		return false, true
	}
	ready = true
	for _, n := range names {
		switch w.jobs[jobKey(pod.Namespace, n)] {
		case depend.Failed:
			return false, true
		case depend.Pending:
			ready = false
		}
	}
	return ready, false
}

// finishJob makes a Job of the world that has not ended complete (five times in six)
// or fail, and gives the core again the pods that wait for it.
func (w *world) finishJob() {
	ns := worldNamespaces[w.rng.IntN(len(worldNamespaces))]
	name := fmt.Sprintf("d%d", w.rng.IntN(worldJobs))
	if w.jobs[jobKey(ns, name)] != depend.Pending {
		return
	}
	s := depend.Ready
	if w.rng.IntN(6) == 0 {
		s = depend.Failed
	}
	w.setJob(ns, name, s)
}

// setJob sets a Job's state and gives the core again every pod that waits for it, at
// the version the core last saw.
func (w *world) setJob(ns, name string, s depend.State) {
	w.jobs[jobKey(ns, name)] = s
	w.logf("job %s/%s %v", ns, name, map[depend.State]string{depend.Ready: "complete", depend.Failed: "failed"}[s])
	for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
		p := w.pods[uid]
		names, _ := dependenciesOf(p.obj)
		if p.lastView.UID == "" || p.obj.Namespace != ns || !slices.Contains(names, name) {
			continue
		}
		p.lastView = w.withDependencies(p.lastView)
		w.q.UpsertPod(p.lastView)
		w.sync(p)
	}
}

// finishAllJobs completes every Job that has not ended (the calm world).
func (w *world) finishAllJobs() {
	for _, ns := range worldNamespaces {
		for i := range worldJobs {
			if name := fmt.Sprintf("d%d", i); w.jobs[jobKey(ns, name)] == depend.Pending {
				w.setJob(ns, name, depend.Ready)
			}
		}
	}
}
