package quota

// Pods that leave unset what ResourceQuota requires every container to set when a quota
// tracks it (constraints.go), in TestRandomizedAdmission: how the world makes them, the
// model's own answer, and the checks after every step.

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// randomResources gives a pod its cpu request (in millicores) and, at random, a memory
// request and a cpu limit; one pod in ten is BestEffort instead. It returns what it
// set, for the log.
func (w *world) randomResources(b *podBuilder, cpu int64) string {
	if w.rng.IntN(10) == 0 {
		return "BestEffort"
	}
	req := fmt.Sprintf("cpu=%dm", cpu)
	if w.rng.IntN(3) == 0 {
		req += fmt.Sprintf(",memory=%dMi", 512*(1+w.rng.IntN(4)))
	}
	b.Req(req)
	var lim []string
	if w.rng.IntN(4) == 0 {
		lim = append(lim, fmt.Sprintf("cpu=%dm", cpu))
	}
	// A hostile tenant's memory limit: ordinary, at the int64 bounds, or beyond what
	// can be counted (ValueOutOfRange). kube-scheduler ignores limits, and the API
	// server accepts them all.
	if w.tenant && w.rng.IntN(5) == 0 {
		lim = append(lim, "memory="+[]string{"4Gi", "9Pi", "4Ei", "9223372036854775807", "1e19", "1e25"}[w.rng.IntN(6)])
	}
	if len(lim) > 0 {
		b.Lim(strings.Join(lim, ","))
		return req + " limits " + strings.Join(lim, ",")
	}
	return req
}

// maxCountable is the largest value of one resource the core counts (amount.MaxUnits),
// as the model writes it.
var maxCountable = resource.MustParse("9223372036854775807")

// uncountable reports whether a pod asks for a value beyond maxCountable: it is never
// admitted (ValueOutOfRange), and a pod that runs without passing its queue is charged
// maxCountable for it.
func uncountable(usage corev1.ResourceList) bool {
	for _, q := range usage {
		if q.Cmp(maxCountable) > 0 {
			return true
		}
	}
	return false
}

// clampedUsage is usage with each value beyond maxCountable charged as maxCountable.
func clampedUsage(usage corev1.ResourceList) corev1.ResourceList {
	if !uncountable(usage) {
		return usage
	}
	out := corev1.ResourceList{}
	for r, q := range usage {
		if q.Cmp(maxCountable) > 0 {
			q = maxCountable.DeepCopy()
		}
		out[r] = q
	}
	return out
}

// modelUnset is the model's answer to UnsetResources for the world's pods (containers
// only, no pod-level resources): the requests and limits of cpu and memory that some
// container leaves unset.
func modelUnset(pod *corev1.Pod) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, kind := range []string{"requests", "limits"} {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
				list := c.Resources.Requests
				if kind == "limits" {
					list = c.Resources.Limits
				}
				if _, ok := list[r]; !ok {
					out = append(out, corev1.ResourceName(kind+"."+string(r)))
					break
				}
			}
		}
	}
	return out
}

// unsetTracked returns what budget k tracks that the pod leaves unset.
func (w *world) unsetTracked(pod *corev1.Pod, k BudgetKey) []corev1.ResourceName {
	hard, _ := NormalizeHard(w.budgets[k].Hard)
	var out []corev1.ResourceName
	for _, name := range modelUnset(pod) {
		if _, ok := hard[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

// leavesTrackedUnset reports whether a budget that covers the pod tracks a value it
// leaves unset: the pod can never be admitted while that is so.
func (w *world) leavesTrackedUnset(pod *corev1.Pod) bool {
	for _, k := range w.cover(pod) {
		if len(w.unsetTracked(pod, k)) > 0 {
			return true
		}
	}
	return false
}

// admittedSetsTracked: a pod admitted because it fits sets every value that the budgets
// covering it track, so none of them charges it nothing for one.
func (w *world) admittedSetsTracked(p *mPod) error {
	for _, k := range w.cover(p.obj) {
		if names := w.unsetTracked(p.obj, k); len(names) > 0 {
			return fmt.Errorf("%s/%s admitted while it leaves unset %v, which %s tracks: it is charged nothing for them", p.obj.Namespace, p.obj.Name, names, k.Describe())
		}
	}
	return nil
}

// checkUnset: a gated pod outside any group that leaves unset a value a covering budget
// tracks waits with MustSpecifyResources, and is listed with ResourceQuota's sentence
// by a budget that covers it and tracks the value; every pod (or group member) a budget
// lists so does leave unset a value that budget tracks; no pod that sets everything
// tracked waits with MustSpecifyResources.
func (w *world) checkUnset() error {
	listed := map[types.UID]bool{}
	for _, k := range w.budgetKeys() {
		st, _ := w.q.Reader().Status(k)
		for _, nf := range st.NeverFit {
			if nf.Unset == "" {
				continue
			}
			uid := nf.Pod.UID
			if nf.Member != "" {
				uid = types.UID(nf.Member) // the world's pods have their name as UID
			}
			m := w.pods[uid]
			if m == nil {
				return fmt.Errorf("%s lists %s as leaving values unset (%s), a pod that is gone", k.Describe(), uid, nf.Unset)
			}
			names := w.unsetTracked(m.obj, k)
			if len(names) == 0 || !strings.Contains(nf.Unset, string(names[0])) {
				return fmt.Errorf("%s lists %s with %q; the model says it leaves unset %v of what it tracks", k.Describe(), m.obj.Name, nf.Unset, names)
			}
			listed[nf.Pod.UID] = true
		}
	}
	for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
		p := w.pods[uid]
		code, waiting := w.q.Reader().WaitCode(uid)
		if !waiting || p.groupName != "" {
			continue
		}
		if _, told := w.namespaces[p.obj.Namespace]; !told {
			continue // held as NamespaceUnknown until its namespace's first event arrives
		}
		if open, valid := w.startOpen(p.obj, w.clk.Now()); !open {
			// Held by its start rule before anything about its quota is looked at.
			want := CodeStartLater
			if !valid {
				want = CodeStartInvalid
			}
			if code != want {
				r, _ := w.q.Reader().WaitReason(uid)
				return fmt.Errorf("%s/%s may not start yet (%v), yet waits with %s: %s", p.obj.Namespace, p.obj.Name, p.obj.Annotations, r.Code, r.Message)
			}
			continue
		}
		if ready, never := w.dependenciesReady(p.obj); !ready {
			want := []ReasonCode{CodeDependencyPending}
			if never {
				want = []ReasonCode{CodeDependencyFailed, CodeDependencyInvalid}
			}
			if !slices.Contains(want, code) {
				r, _ := w.q.Reader().WaitReason(uid)
				return fmt.Errorf("%s/%s waits for %s, yet waits with %s: %s", p.obj.Namespace, p.obj.Name, p.obj.Annotations[v1alpha1.WaitForAnnotation], r.Code, r.Message)
			}
			continue
		}
		if uncountable(p.usage) {
			if code != CodeUncountable {
				r, _ := w.q.Reader().WaitReason(uid)
				return fmt.Errorf("%s/%s asks for a value beyond what can be counted, yet waits with %s: %s", p.obj.Namespace, p.obj.Name, r.Code, r.Message)
			}
			continue
		}
		switch held := w.leavesTrackedUnset(p.obj); {
		case held && code != CodeMustSpecify:
			r, _ := w.q.Reader().WaitReason(uid)
			return fmt.Errorf("%s/%s leaves unset %v but waits with %s: %s", p.obj.Namespace, p.obj.Name, modelUnset(p.obj), r.Code, r.Message)
		case held && !listed[uid]:
			return fmt.Errorf("%s/%s waits with %s, but no budget lists it", p.obj.Namespace, p.obj.Name, code)
		case !held && code == CodeMustSpecify:
			r, _ := w.q.Reader().WaitReason(uid)
			return fmt.Errorf("%s/%s sets everything its budgets track, yet waits with %s", p.obj.Namespace, p.obj.Name, r.Message)
		}
	}
	return nil
}
