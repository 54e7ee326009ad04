package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota/controller"
)

// The manager's estimator on a real API server, through the manager's own informers
// and caches: a Budget of 1 CPU runs a pod that declares it runs 10 minutes, and the
// gated pod behind it is estimated to start when that one ends.
func TestEstimatesOnRealAPIServer(t *testing.T) {
	ns, m, started := startDeclaredFirst(t)
	second := declaredPod(ns, "second", "5m")
	mustCreate(t, second)
	want := started.Add(10 * time.Minute)
	var last string
	testbed.Poll(t, time.Minute, "the second pod's estimate: when the first ends", func(context.Context) (bool, error) {
		s, ok := m.ctrl.EstimatedStart(second.UID)
		last = fmt.Sprintf("%+v (present %v)", s, ok)
		return ok && s.Known && s.Median.Equal(want) && s.Ends == 1, nil
	})
	t.Logf("the second pod's estimate: %s", last)
	if isGated(t, ns, "first") || !isGated(t, ns, "second") {
		t.Errorf("the first pod should run and the second wait")
	}
}

// declaredPod is a gated pod of 1 CPU in ns that declares it runs for d.
func declaredPod(ns, name, d string) *corev1.Pod {
	p := gatedPod(ns, name, "1")
	p.Annotations = map[string]string{v1alpha1.ExpectedDurationAnnotation: d}
	return p
}

// startDeclaredFirst starts what the estimator's tests on a real API server start from:
// a new opted-in namespace with a Budget of 1 CPU, a pod "first" that declares it runs
// 10 minutes, and a manager estimating every 200 ms. It returns once the first pod is
// admitted and started, with when it started.
func startDeclaredFirst(t *testing.T) (ns string, m *runningManager, started time.Time) {
	t.Helper()
	ns = newNamespace(t, true)
	mustCreate(t, budget(ns, "team", cpu("1"), ""))
	first := declaredPod(ns, "first", "10m")
	mustCreate(t, first)
	m = startManager(t, func(o *controller.Options) { o.EstimateInterval = 200 * time.Millisecond }, false)
	testbed.Poll(t, time.Minute, "the first pod admitted and started", func(ctx context.Context) (bool, error) {
		p := &corev1.Pod{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(first), p); err != nil {
			return false, err
		}
		if p.Status.StartTime != nil {
			started = p.Status.StartTime.Time
		}
		return len(p.Spec.SchedulingGates) == 0 && !started.IsZero(), nil
	})
	return ns, m, started
}
