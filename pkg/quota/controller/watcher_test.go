package controller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/gates"
)

// admissionWatcher watches the pods of a namespace and checks, at every event, that the
// CPU requested by admitted (ungated), non-terminal pods stays within a limit. It also
// records the order in which pods lost their gate.
type admissionWatcher struct {
	mu       sync.Mutex
	limit    resource.Quantity
	charged  map[types.UID]resource.Quantity
	seen     map[types.UID]bool // admitted once
	order    []string
	peak     resource.Quantity
	exceeded []string
	cancel   context.CancelFunc
	done     chan struct{}
}

// watchAdmissions starts the watcher before any pod exists, so no event is missed.
func watchAdmissions(t *testing.T, ns string, limit string) *admissionWatcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watching pods: %v", err)
	}
	aw := &admissionWatcher{
		limit:   resource.MustParse(limit),
		charged: map[types.UID]resource.Quantity{},
		seen:    map[types.UID]bool{},
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	go func() {
		defer close(aw.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			aw.observe(ev.Type, pod)
		}
	}()
	t.Cleanup(aw.stop)
	return aw
}

func (aw *admissionWatcher) observe(typ watch.EventType, pod *corev1.Pod) {
	aw.mu.Lock()
	defer aw.mu.Unlock()
	admitted := !gates.HasGate(pod, v1alpha1.SchedulingGate)
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if admitted && !aw.seen[pod.UID] {
		aw.seen[pod.UID] = true
		aw.order = append(aw.order, pod.Name)
	}
	if typ == watch.Deleted || terminal || !admitted {
		delete(aw.charged, pod.UID)
	} else {
		aw.charged[pod.UID] = *pod.Spec.Containers[0].Resources.Requests.Cpu()
	}
	var sum resource.Quantity
	for _, q := range aw.charged {
		sum.Add(q)
	}
	if sum.Cmp(aw.peak) > 0 {
		aw.peak = sum.DeepCopy()
	}
	if sum.Cmp(aw.limit) > 0 {
		aw.exceeded = append(aw.exceeded, pod.Name+" made it "+sum.String())
	}
}

func (aw *admissionWatcher) stop() {
	aw.cancel()
	<-aw.done
}

// waitForAdmissions waits until the watch has delivered n admissions: a List can show
// a pod ungated before this watch's event for it has arrived.
func (aw *admissionWatcher) waitForAdmissions(t *testing.T, n int) {
	t.Helper()
	poll(t, time.Minute, fmt.Sprintf("the watch to see %d admissions", n), func() (bool, error) {
		aw.mu.Lock()
		defer aw.mu.Unlock()
		return len(aw.order) >= n, nil
	})
}

// check fails the test if the limit was ever exceeded, and returns the admission order.
func (aw *admissionWatcher) check(t *testing.T) []string {
	t.Helper()
	aw.mu.Lock()
	defer aw.mu.Unlock()
	if len(aw.exceeded) > 0 {
		t.Errorf("admitted, non-terminal pods exceeded %s CPU: %v", aw.limit.String(), aw.exceeded)
	}
	t.Logf("peak admitted CPU %s of %s; admission order %v", aw.peak.String(), aw.limit.String(), aw.order)
	return append([]string(nil), aw.order...)
}
