package controller_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
)

// admittedCondition reads the pod and returns its quotagate condition, if any.
func admittedCondition(t *testing.T, ns, name string) (*corev1.PodCondition, *corev1.Pod) {
	t.Helper()
	pod := &corev1.Pod{}
	if err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		t.Fatal(err)
	}
	for i, c := range pod.Status.Conditions {
		if c.Type == v1alpha1.PodConditionAdmitted {
			return &pod.Status.Conditions[i], pod
		}
	}
	return nil, pod
}

// waitForCondition waits until the pod's quotagate condition is False with reason and
// a message that contains message.
func waitForCondition(t *testing.T, ns, name, reason, message string) *corev1.PodCondition {
	t.Helper()
	var got *corev1.PodCondition
	testbed.Poll(t, time.Minute, fmt.Sprintf("%s's condition to say %s: %s", name, reason, message), func(context.Context) (bool, error) {
		got, _ = admittedCondition(t, ns, name)
		return got != nil && got.Status == corev1.ConditionFalse && got.Reason == reason && strings.Contains(got.Message, message), nil
	})
	return got
}

// A waiting pod's condition follows its reason: InsufficientQuota, then BudgetClosed
// while the budget is Closing, InsufficientQuota again once it reopens, and gone once
// the pod is admitted. The message never carries the queue position, and a pod's
// condition is not rewritten when only its position moves. Each change of reason is
// one Waiting event; the manager writes as the quotagate-manager ServiceAccount, so
// this proves its RBAC (pods/status patch) on the real API server.
func TestPodConditionFollowsReason(t *testing.T) {
	ns := newNamespace(t, true)
	b := budget(ns, "team", cpu("1"), "")
	mustCreate(t, b)
	startManager(t, nil, false)
	mustCreate(t, gatedPod(ns, podName(0), "1"))
	testbed.Poll(t, time.Minute, "p00 admitted", func(context.Context) (bool, error) { return !isGated(t, ns, podName(0)), nil })
	if c, _ := admittedCondition(t, ns, podName(0)); c != nil {
		t.Errorf("p00, admitted at once, carries %s=%s (%s): want no condition", c.Type, c.Status, c.Reason)
	}

	mustCreate(t, gatedPod(ns, podName(1), "1"))
	first := waitForCondition(t, ns, podName(1), "InsufficientQuota", "requests.cpu: 1 requested, more than is free in Budget "+ns+"/team")
	if strings.Contains(first.Message, "position") {
		t.Errorf("condition message %q carries the queue position", first.Message)
	}
	_, before := admittedCondition(t, ns, podName(1))

	// Two pods of higher priority go ahead of p01: its position moves, its reason not.
	for i := 2; i <= 3; i++ {
		pod := gatedPod(ns, podName(i), "1")
		pod.Spec.PriorityClassName = "qg-high"
		mustCreate(t, pod)
	}
	for i := 2; i <= 3; i++ {
		waitForCondition(t, ns, podName(i), "InsufficientQuota", "more than is free")
	}
	if _, after := admittedCondition(t, ns, podName(1)); after.ResourceVersion != before.ResourceVersion {
		t.Errorf("p01 was written (resourceVersion %s -> %s) when only its queue position moved", before.ResourceVersion, after.ResourceVersion)
	}

	// Closed while p00 runs: Closing.
	setBudgetState(t, b, v1alpha1.StateClosed)
	closing := waitForCondition(t, ns, podName(1), "BudgetClosed", "Budget "+ns+"/team is Closing")
	if !closing.LastTransitionTime.Equal(&first.LastTransitionTime) {
		t.Errorf("lastTransitionTime moved from %v to %v while the condition stayed False", first.LastTransitionTime, closing.LastTransitionTime)
	}
	// Reopened: InsufficientQuota again (p00 still holds the quota).
	setBudgetState(t, b, v1alpha1.StateOpen)
	waitForCondition(t, ns, podName(1), "InsufficientQuota", "more than is free in Budget "+ns+"/team")

	// p00 and the two ahead go: p01 is admitted and carries no condition.
	for _, i := range []int{0, 2, 3} {
		if err := admin.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	testbed.Poll(t, time.Minute, "p01 admitted, its condition removed", func(context.Context) (bool, error) {
		c, pod := admittedCondition(t, ns, podName(1))
		gated := false
		for _, g := range pod.Spec.SchedulingGates {
			gated = gated || g.Name == v1alpha1.SchedulingGate
		}
		return !gated && c == nil, nil
	})

	// The events of one reason are one series (client-go keys them by reason, not by
	// message, and keeps the first message): count the occurrences.
	evs, err := clientset.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "regarding.name=" + podName(1)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int32{}
	for _, e := range evs.Items {
		if strings.HasPrefix(e.Note, "Waiting: ") {
			n := int32(1)
			if e.Series != nil {
				n = e.Series.Count
			}
			got[e.Reason] += n
		}
	}
	if want := map[string]int32{"InsufficientQuota": 2, "BudgetClosed": 1}; !maps.Equal(got, want) {
		t.Errorf("Waiting events on p01 by reason: %v, want one per change of reason: %v", got, want)
	}
}

// failingStatusWrites fails the first writes of pods/status the manager sends: the
// odd ones after the API server applied them (the answer is lost), the even ones
// before.
type failingStatusWrites struct {
	mu    sync.Mutex
	fail  int
	count int
}

// wrap fails the writes sent through rt (every client the manager builds has a
// transport of its own).
func (f *failingStatusWrites) wrap(rt http.RoundTripper) http.RoundTripper {
	return failingTransport{f, rt}
}

type failingTransport struct {
	f    *failingStatusWrites
	next http.RoundTripper
}

func (t failingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f := t.f
	if req.Method != http.MethodPatch || !strings.HasSuffix(req.URL.Path, "/status") || !strings.Contains(req.URL.Path, "/pods/") {
		return t.next.RoundTrip(req)
	}
	f.mu.Lock()
	n := f.count
	f.count++
	f.mu.Unlock()
	if n >= f.fail {
		return t.next.RoundTrip(req)
	}
	if n%2 == 1 {
		resp, err := t.next.RoundTrip(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		return nil, errors.New("connection reset after the request was sent (injected)")
	}
	return &http.Response{
		StatusCode: http.StatusInternalServerError, Request: req,
		Header: http.Header{"Content-Type": []string{"application/json"}},
		Body:   io.NopCloser(strings.NewReader(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected","reason":"InternalError","code":500}`)),
	}, nil
}

func (f *failingStatusWrites) failed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return min(f.count, f.fail)
}

// Writes of the condition that fail, or whose answer is lost, are retried: the pod
// gets its condition, and once admitted loses it; the ungate never waits on them.
func TestPodConditionWritesRetried(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "team", cpu("1"), ""))
	faults := &failingStatusWrites{fail: 4}
	cfg := rest.CopyConfig(managerSA)
	cfg.Wrap(faults.wrap)
	startManagerWithConfig(t, cfg, nil, false)

	mustCreate(t, gatedPod(ns, podName(0), "1"))
	testbed.Poll(t, time.Minute, "p00 admitted", func(context.Context) (bool, error) { return !isGated(t, ns, podName(0)), nil })
	mustCreate(t, gatedPod(ns, podName(1), "1"))
	waitForCondition(t, ns, podName(1), "InsufficientQuota", "more than is free")
	// Its removal meets the faults left, if any.
	if err := admin.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName(0)}}); err != nil {
		t.Fatal(err)
	}
	testbed.Poll(t, 2*time.Minute, "p01 admitted, its condition removed", func(context.Context) (bool, error) {
		c, _ := admittedCondition(t, ns, podName(1))
		return !isGated(t, ns, podName(1)) && c == nil, nil
	})
	if got := faults.failed(); got < 2 {
		t.Errorf("%d status writes failed, want at least 2 (one refused, one whose answer was lost)", got)
	}
}
