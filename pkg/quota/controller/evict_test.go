package controller

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// TestEvictionOutcomes: whatever the API server answers to an eviction, the victim is
// evicted only while the core still needs it, the core counts it as leaving once it is
// (so no second victim is taken for the same room), and the events and metrics tell
// what happened, each naming the budget that preempted. The budget (2 CPU, preemption
// within it for lower priorities) runs "low"; "high" waits for its 2 CPU, and the core
// decides to evict "low" (the cooldown is off: New's options leave it zero).
func TestEvictionOutcomes(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("i/o timeout")}
	refused := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	tests := map[string]struct {
		// evict answers the n-th eviction request (from 1); apply sends it to the
		// (fake) API server, which deletes the pod. core is the controller's core.
		evict func(n int, apply func() error, c client.Client, core *quota.AdmissionQueue) error
		// readFails makes the fresh read of the victim fail.
		readFails bool
		// blockedTimeout is the budget's spec.preemption.blockedTimeout.
		blockedTimeout time.Duration
		wantRequests   int
		wantEvicted    bool     // the victim is gone from the API server
		wantEvents     []string // "type reason", in order
		wantCounted    float64  // quotagate_preemptions_total
		wantFailed     float64  // quotagate_preemption_attempts_failed_total
	}{
		"accepted": {
			evict:        func(_ int, apply func() error, _ client.Client, _ *quota.AdmissionQueue) error { return apply() },
			wantRequests: 1, wantEvicted: true,
			wantEvents:  []string{"Normal Preempted", "Normal Preempting"},
			wantCounted: 1,
		},
		"applied, the answer lost: read fresh, it is gone": {
			evict: func(_ int, apply func() error, _ client.Client, _ *quota.AdmissionQueue) error {
				if err := apply(); err != nil {
					return err
				}
				return timeout
			},
			wantRequests: 1, wantEvicted: true,
			wantEvents:  []string{"Normal Preempted", "Normal Preempting"},
			wantCounted: 1, wantFailed: 1,
		},
		"applied, the answer lost, and the fresh read fails: the next try finds it gone": {
			evict: func(n int, apply func() error, _ client.Client, _ *quota.AdmissionQueue) error {
				err := apply()
				if n == 1 && err == nil {
					return timeout
				}
				return err
			},
			readFails:    true,
			wantRequests: 2, wantEvicted: true,
			wantFailed: 1,
		},
		"a 500 that was not applied: tried again": {
			evict: func(n int, apply func() error, _ client.Client, _ *quota.AdmissionQueue) error {
				if n == 1 {
					return apierrors.NewInternalError(errors.New("etcd hiccup"))
				}
				return apply()
			},
			wantRequests: 2, wantEvicted: true,
			wantEvents:  []string{"Normal Preempted", "Normal Preempting"},
			wantCounted: 1, wantFailed: 1,
		},
		"refused by a PodDisruptionBudget twice: reported once, then evicted": {
			evict: func(n int, apply func() error, _ client.Client, _ *quota.AdmissionQueue) error {
				if n <= 2 {
					return refused
				}
				return apply()
			},
			wantRequests: 3, wantEvicted: true,
			wantEvents: []string{
				"Warning PreemptionBlocked", "Warning PreemptionBlocked",
				"Normal Preempted", "Normal Preempting",
			},
			wantCounted: 1, wantFailed: 2,
		},
		"refused, and the waiting pod is deleted: the victim is spared, nothing reported": {
			evict: func(_ int, _ func() error, _ client.Client, core *quota.AdmissionQueue) error {
				core.DeletePod("uid-high")
				return refused
			},
			wantRequests: 1,
			wantFailed:   1,
		},
		"refused past the budget's blockedTimeout, no other victim: deleted despite the PDB": {
			evict:          func(int, func() error, client.Client, *quota.AdmissionQueue) error { return refused },
			blockedTimeout: 30 * time.Second,
			wantRequests:   2, wantEvicted: true,
			wantEvents: []string{
				"Warning PreemptionBlocked", "Warning PreemptionBlocked",
				"Warning PreemptionForced", "Warning PreemptionForced",
			},
			wantCounted: 1, wantFailed: 2,
		},
		"the victim ended on its own: nothing to evict, nothing reported": {
			evict: func(_ int, apply func() error, c client.Client, _ *quota.AdmissionQueue) error {
				if err := c.Delete(t.Context(), runningPod("low", 1)); err != nil {
					return err
				}
				return apply()
			},
			wantRequests: 1, wantEvicted: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			low, high := runningPod("low", 1), gatedPod("high", 2)
			high.Spec.Priority = ptr.To[int32](10)
			reg := prometheus.NewRegistry()
			c, err := New(Options{Gate: v1alpha1.SchedulingGate, Workers: 1, Clock: clk, Registerer: reg})
			if err != nil {
				t.Fatal(err)
			}
			requests := 0
			base := fake.NewClientBuilder().WithObjects(low, high).WithInterceptorFuncs(interceptor.Funcs{
				SubResourceCreate: func(ctx context.Context, cl client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
					requests++
					apply := func() error { return cl.SubResource(sub).Create(ctx, obj, subObj, opts...) }
					return tc.evict(requests, apply, cl, c.core)
				},
			}).Build()
			rec := events.NewFakeRecorder(10)
			useAPI(c, base, tc.readFails, rec)
			c.core.SetNamespace("ns", map[string]string{v1alpha1.EnabledLabel: "true"})
			c.core.UpsertBudget(quota.Budget{
				Key:            quota.BudgetKey{Namespace: "ns", Name: "b"},
				Hard:           corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				WithinBudget:   v1alpha1.WithinBudgetLowerPriority,
				BlockedTimeout: tc.blockedTimeout,
			})
			showCore(ctx, t, c, base, clk.Now(), low, high)
			if adm := c.core.Admit(); len(adm) != 0 {
				t.Fatalf("admitted %v into a full budget", adm)
			}
			decided := c.core.Preemptions()
			if len(decided) != 1 || decided[0].Victim.Name != "low" || decided[0].Preemptor.Name != "high" {
				t.Fatalf("preemptions %+v, want low evicted for high", decided)
			}

			done := make(chan struct{})
			go func() {
				defer close(done)
				c.evictions.preempt(ctx, decided[0])
			}()
			// Step the clock through the retries until preempt returns.
			for finished := false; !finished; {
				select {
				case <-done:
					finished = true
				case <-time.After(time.Millisecond):
					if clk.HasWaiters() {
						clk.Step(evictRetryMax)
					}
				}
			}

			if requests != tc.wantRequests {
				t.Errorf("%d eviction requests, want %d", requests, tc.wantRequests)
			}
			err = base.Get(ctx, client.ObjectKeyFromObject(low), &corev1.Pod{})
			if evicted := apierrors.IsNotFound(err); evicted != tc.wantEvicted {
				t.Errorf("low evicted = %v (get: %v), want %v", evicted, err, tc.wantEvicted)
			}
			var got []string
			for len(rec.Events) > 0 {
				e := <-rec.Events
				f := strings.Fields(e) // "type reason note"
				got = append(got, f[0]+" "+f[1])
				// Each event on either pod says which budget preempted.
				if !strings.Contains(e, "by Budget ns/b") {
					t.Errorf("event %q does not name the Budget that preempted", e)
				}
			}
			if diff := cmp.Diff(tc.wantEvents, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			counted := testutil.ToFloat64(c.metrics.preemptions.WithLabelValues(string(quota.PreemptWithinBudget)))
			failed := testutil.ToFloat64(c.metrics.preemptionsBlocked.WithLabelValues(string(quota.PreemptWithinBudget)))
			if counted != tc.wantCounted || failed != tc.wantFailed {
				t.Errorf("%v preemptions and %v failed attempts counted, want %v and %v", counted, failed, tc.wantCounted, tc.wantFailed)
			}
			// Once the eviction went through, the core counts low as leaving: it is no
			// longer to be evicted, and nothing else is chosen in its place.
			if c.core.PreemptionNeeded(low.UID) {
				t.Error("low is still to be evicted after preempt returned")
			}
			c.core.Admit()
			if again := c.core.Preemptions(); len(again) != 0 {
				t.Errorf("preemptions decided again: %+v", again)
			}
		})
	}
}

// runningPod is an admitted pod of namespace ns: no gate, 2 CPU, priority 1.
func runningPod(name string, created int) *corev1.Pod {
	p := gatedPod(name, created)
	p.Spec.SchedulingGates = nil
	p.Spec.Priority = ptr.To[int32](1)
	return p
}
