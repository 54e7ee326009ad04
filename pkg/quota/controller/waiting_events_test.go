package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// Only the head of a queue gets Waiting events: with WaitingEventsPerBudget 2, the
// first two waiting pods are told why, the rest are not until they move up.
func TestWaitingEventsAtTheHeadOnly(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "b", cpu("1"), ""))
	startManager(t, func(o *controller.Options) { o.WaitingEventsPerBudget = 2 }, false)
	mustCreate(t, gatedPod(ns, podName(0), "1"))
	testbed.Poll(t, time.Minute, "p00 admitted", func(context.Context) (bool, error) { return !isGated(t, ns, podName(0)), nil })
	// Then four that wait, in this order whatever their timestamps.
	for i, class := range []string{"qg-high", "qg-mid", "qg-low", ""} {
		pod := gatedPod(ns, podName(i+1), "1")
		pod.Spec.PriorityClassName = class
		mustCreate(t, pod)
	}
	waitForWaitingEvent(t, ns, podName(1), "InsufficientQuota")
	waitForWaitingEvent(t, ns, podName(2), "InsufficientQuota")
	if got := waitingEventsOn(t, ns); !slices.Equal(got, []string{podName(1), podName(2)}) {
		t.Errorf("Waiting events on %v, want p01 and p02 only", got)
	}

	// p00 goes: p01 is admitted and p03 reaches the head.
	if err := admin.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName(0)}}); err != nil {
		t.Fatal(err)
	}
	testbed.Poll(t, time.Minute, "p01 admitted", func(context.Context) (bool, error) { return !isGated(t, ns, podName(1)), nil })
	waitForWaitingEvent(t, ns, podName(3), "InsufficientQuota")
	if got := waitingEventsOn(t, ns); !slices.Equal(got, []string{podName(1), podName(2), podName(3)}) {
		t.Errorf("Waiting events on %v, want p01, p02 and p03 (p04 is third in line)", got)
	}
}

// waitingEventsOn lists the pods of the namespace that have a Waiting event, sorted.
func waitingEventsOn(t *testing.T, ns string) []string {
	t.Helper()
	return slices.Compact(eventNames(t, ns, func(e corev1.Event) (string, bool) {
		return e.InvolvedObject.Name, e.InvolvedObject.Kind == "Pod" && strings.HasPrefix(e.Message, "Waiting: ")
	}))
}

// eventNames lists, sorted, the name that name picks from each event of a namespace it
// keeps.
func eventNames(t *testing.T, ns string, name func(corev1.Event) (string, bool)) []string {
	t.Helper()
	evs, err := clientset.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		if n, ok := name(e); ok {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
