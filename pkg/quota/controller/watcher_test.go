package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotagate/quotagate/internal/testbed"
)

// admissionWatcher checks, at every watch event of a namespace, that the CPU requested
// by admitted (ungated), non-terminal pods stays within a limit (testbed.UsageWatcher),
// and gives the order in which pods lost their gate.
type admissionWatcher struct {
	*testbed.UsageWatcher
	limit string
}

// watchAdmissions starts the watcher before any pod exists, so no event is missed.
func watchAdmissions(t *testing.T, ns string, limit string) *admissionWatcher {
	t.Helper()
	w, err := testbed.WatchUsage(t.Context(), clientset, ns, corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(limit)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return &admissionWatcher{UsageWatcher: w, limit: limit}
}

// waitForAdmissions waits until the watch has delivered n admissions: a List can show
// a pod ungated before this watch's event for it has arrived.
func (aw *admissionWatcher) waitForAdmissions(t *testing.T, n int) {
	t.Helper()
	testbed.Poll(t, time.Minute, fmt.Sprintf("the watch to see %d admissions", n), func(context.Context) (bool, error) {
		return len(aw.Report().Admitted) >= n, nil
	})
}

// check fails the test if the limit was ever exceeded, and returns the admission order.
func (aw *admissionWatcher) check(t *testing.T) []string {
	t.Helper()
	r := aw.Report()
	if len(r.Violations) > 0 {
		t.Errorf("admitted, non-terminal pods exceeded %s CPU: %v", aw.limit, r.Violations)
	}
	order := make([]string, 0, len(r.Admitted))
	for _, a := range r.Admitted {
		order = append(order, a.Pod)
	}
	peak := r.Peak[corev1.ResourceRequestsCPU]
	t.Logf("peak admitted CPU %s of %s; admission order %v", peak.String(), aw.limit, order)
	return order
}
