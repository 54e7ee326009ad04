package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// clock is the time format of every line the demo prints.
const clock = "15:04:05"

// tracker follows the burst's pods through their states, in the order the API server
// made the changes, and keeps the peak of admitted CPU (pods without the quotagate gate
// that have not finished).
type tracker struct {
	states   map[string]string // pod name -> last state printed
	admitted map[string]int64  // pod name -> CPU request in millicores, while admitted
	peak     int64             // millicores
	done     int
	failed   []string
}

func newTracker() *tracker {
	return &tracker{states: map[string]string{}, admitted: map[string]int64{}}
}

// podState is what `kubectl get pods` shows in its STATUS column, near enough.
func podState(pod *corev1.Pod) string {
	if slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == v1alpha1.SchedulingGate
	}) {
		return "SchedulingGated"
	}
	return string(pod.Status.Phase)
}

// observe records a pod's new version and returns the line announcing its change of
// state, or "" when its state did not change.
func (tr *tracker) observe(pod *corev1.Pod, now time.Time) string {
	s := podState(pod)
	prev, seen := tr.states[pod.Name]
	if seen && prev == s {
		return ""
	}
	tr.states[pod.Name] = s
	switch {
	case s == string(corev1.PodSucceeded) || s == string(corev1.PodFailed):
		delete(tr.admitted, pod.Name)
		if s == string(corev1.PodSucceeded) {
			tr.done++
		} else {
			tr.failed = append(tr.failed, pod.Name)
		}
	case s != "SchedulingGated":
		reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		tr.admitted[pod.Name] = reqs.Cpu().MilliValue()
	}
	var sum int64
	for _, m := range tr.admitted {
		sum += m
	}
	tr.peak = max(tr.peak, sum)
	if !seen {
		return fmt.Sprintf("%s  %-14s created, %s", now.Format(clock), pod.Name, s)
	}
	return fmt.Sprintf("%s  %-14s %s -> %s", now.Format(clock), pod.Name, prev, s)
}

// budgetLine is the progress line of one budget: its status as `kubectl get budgets`
// shows it, a bar of used CPU against hard, and the burst's progress.
func budgetLine(now time.Time, b *v1alpha1.Budget, done, total int) string {
	hard := b.Status.Hard[corev1.ResourceRequestsCPU]
	used := b.Status.Used[corev1.ResourceRequestsCPU]
	const width = 12
	filled := 0
	if hard.MilliValue() > 0 {
		filled = int(min(used.MilliValue()*width/hard.MilliValue(), width))
	}
	bar := strings.Repeat("#", filled) + strings.Repeat(".", width-filled)
	return fmt.Sprintf("%s  budget %s/%s %-6s [%s] cpu %s/%s  admitted %d  gated %d  done %d/%d",
		now.Format(clock), b.Namespace, b.Name, b.Status.State, bar, used.String(), hard.String(),
		b.Status.AdmittedPods, b.Status.GatedPods, done, total)
}
