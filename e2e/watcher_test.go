//go:build e2e

package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/gates"
)

// podWatcher follows every pod of a namespace and checks, at every revision, that the
// admitted (ungated), non-terminal pods fit in the budget: testbed.UsageWatcher.
type podWatcher struct{ *testbed.UsageWatcher }

func hasGate(pod *corev1.Pod) bool { return gates.HasGate(pod, v1alpha1.SchedulingGate) }

// watchPods starts a watcher on namespace that checks hardCPU and hardPods; it stops
// with ctx.
func watchPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, namespace string, hardCPU string, hardPods int) *podWatcher {
	t.Helper()
	return watchFlavoredPods(ctx, t, cs, namespace, corev1.ResourceList{
		corev1.ResourceRequestsCPU: resource.MustParse(hardCPU),
		corev1.ResourcePods:        *resource.NewQuantity(int64(hardPods), resource.DecimalSI),
	}, nil)
}

// watchFlavoredPods is watchPods for a budget with flavors: it checks hard and, at
// every revision too, each flavor's hard against the admitted pods whose nodeSelector
// puts them on that flavor.
func watchFlavoredPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, namespace string, hard corev1.ResourceList, flavors []testbed.FlavorLimit) *podWatcher {
	t.Helper()
	w, err := testbed.WatchUsageFlavored(ctx, cs, namespace, hard, flavors)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return &podWatcher{w}
}

// snapshot returns copies of what the watcher saw: each pod's states, the pods in the
// order their gate went away, the peaks and the violations.
func (w *podWatcher) snapshot() (states map[string][]string, ungated []string, peakCPU resource.Quantity, peakPods int, violations []string) {
	r := w.Report()
	for _, a := range r.Admitted {
		ungated = append(ungated, a.Pod)
	}
	pods := r.Peak[corev1.ResourcePods]
	return r.States, ungated, r.Peak[corev1.ResourceRequestsCPU], int(pods.Value()), r.Violations
}

// waitFor polls cond every testbed.PollInterval until it returns true or timeout
// passes, then fails the test with the last message cond gave.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	waitForEvery(t, what, timeout, testbed.PollInterval, cond)
}

// waitForEvery is waitFor polling every interval, for moments that pass quickly: it
// adapts e2e's conditions, which say why they are not done, to testbed.PollEvery.
func waitForEvery(t *testing.T, what string, timeout, interval time.Duration, cond func() (bool, string)) {
	t.Helper()
	testbed.PollEvery(t, interval, timeout, what, func(context.Context) (bool, error) {
		ok, msg := cond()
		return ok, testbed.NotYet(errors.New(msg))
	})
}
