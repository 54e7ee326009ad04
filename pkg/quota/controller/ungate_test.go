package controller

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota"
)

// TestUngateOutcomes: whatever the API server answers, the controller reports to the
// core only what it knows, so that a budget is never exceeded. The budget holds 2 CPU;
// p1 (admitted) and p2 (waiting) want 2 each: p2 may go only when p1's charge is
// proven free.
func TestUngateOutcomes(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("i/o timeout")}
	gr := schema.GroupResource{Resource: "pods"}
	tests := map[string]struct {
		// patch answers the ungate patch; apply sends it to the (fake) API server.
		patch func(ctx context.Context, n int, apply func() error, c client.WithWatch, pod client.Object) error
		// getFails makes the fresh read fail.
		getFails    bool
		wantGated   bool     // p1 still carries the gate in the API server
		wantAdmit   []string // admitted by an Admit right after (nothing due by the clock)
		wantWaiting bool     // p1 is back in the queues: its charge was given back
		wantRetried bool     // after a backoff, p1's admission is handed out again
		wantEvents  int      // Admitted events on the pod (PodAdmittedEvents on)
	}{
		"applied": {
			patch: func(_ context.Context, _ int, apply func() error, _ client.WithWatch, _ client.Object) error {
				return apply()
			},
			wantEvents: 1,
		},
		"applied, response lost": {
			patch: func(_ context.Context, _ int, apply func() error, _ client.WithWatch, _ client.Object) error {
				if err := apply(); err != nil {
					return err
				}
				return timeout
			},
			wantEvents: 1,
		},
		"applied, then a 500": {
			patch: func(_ context.Context, _ int, apply func() error, _ client.WithWatch, _ client.Object) error {
				_ = apply()
				return apierrors.NewInternalError(errors.New("etcd hiccup"))
			},
			wantEvents: 1,
		},
		"never reached the server: the charge stands and the ungate is retried": {
			patch: func(context.Context, int, func() error, client.WithWatch, client.Object) error {
				return timeout
			},
			wantGated:   true,
			wantRetried: true,
		},
		"refused by a guard: the charge stands and the ungate is retried": {
			patch: func(context.Context, int, func() error, client.WithWatch, client.Object) error {
				return apierrors.NewForbidden(gr, "p1", errors.New("denied"))
			},
			wantGated:   true,
			wantRetried: true,
		},
		"outcome unknown and the fresh read fails: the charge stands": {
			patch: func(_ context.Context, _ int, apply func() error, _ client.WithWatch, _ client.Object) error {
				_ = apply()
				return timeout
			},
			getFails:    true,
			wantRetried: true, // and then finds the gate gone
		},
		"the pod changed under the patch: sent again on the new version": {
			patch: func(ctx context.Context, n int, apply func() error, c client.WithWatch, pod client.Object) error {
				if n == 1 {
					if err := relabel(ctx, c, pod); err != nil {
						return err
					}
				}
				return apply() // the first is fenced on the old version: refused
			},
			wantEvents: 1,
		},
		"a toleration added under the patch: not sent on that version, given back": {
			patch: func(ctx context.Context, n int, apply func() error, c client.WithWatch, pod client.Object) error {
				if n == 1 {
					p := &corev1.Pod{}
					if err := c.Get(ctx, client.ObjectKeyFromObject(pod), p); err != nil {
						return err
					}
					p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists})
					if err := c.Update(ctx, p); err != nil {
						return err
					}
				}
				return apply() // fenced on the version without it: refused
			},
			wantGated:   true,
			wantAdmit:   []string{"p2"},
			wantWaiting: true,
		},
		"the pod keeps changing: given back, it backs off": {
			patch: func(ctx context.Context, _ int, apply func() error, c client.WithWatch, pod client.Object) error {
				if err := relabel(ctx, c, pod); err != nil {
					return err
				}
				return apply()
			},
			wantGated:   true,
			wantAdmit:   []string{"p2"},
			wantWaiting: true,
		},
		"gone": {
			patch: func(ctx context.Context, _ int, _ func() error, c client.WithWatch, pod client.Object) error {
				if err := c.Delete(ctx, pod); err != nil {
					return err
				}
				return apierrors.NewNotFound(gr, "p1")
			},
			wantAdmit: []string{"p2"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			p1, p2 := gatedPod("p1", 1), gatedPod("p2", 2)
			patches := 0
			base := fake.NewClientBuilder().WithObjects(p1, p2).WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					patches++
					return tc.patch(ctx, patches, func() error { return c.Patch(ctx, obj, patch, opts...) }, c, obj)
				},
			}).Build()
			c, err := New(Options{Gate: v1alpha1.SchedulingGate, Workers: 1, Clock: clk, PodAdmittedEvents: true})
			if err != nil {
				t.Fatal(err)
			}
			rec := events.NewFakeRecorder(10)
			useAPI(c, base, tc.getFails, rec)
			c.core.SetNamespace("ns", map[string]string{v1alpha1.EnabledLabel: "true"})
			c.core.UpsertBudget(quota.Budget{Key: quota.BudgetKey{Namespace: "ns", Name: "b"}, Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}})
			showCore(ctx, t, c, base, clk.Now(), p1, p2)
			adm := c.core.Admit()
			if len(adm) != 1 || adm[0].Pod.Name != "p1" {
				t.Fatalf("first Admit = %v, want p1", adm)
			}
			c.ungate(ctx, adm[0])

			got := &corev1.Pod{}
			if err := base.Get(ctx, client.ObjectKeyFromObject(p1), got); err == nil {
				if gated := gates.HasGate(got, v1alpha1.SchedulingGate); gated != tc.wantGated {
					t.Errorf("p1 gated in the API server = %v, want %v", gated, tc.wantGated)
				}
			}
			var admitted []string
			for _, a := range c.core.Admit() {
				admitted = append(admitted, a.Pod.Name)
			}
			if diff := cmp.Diff(tc.wantAdmit, admitted); diff != "" {
				t.Errorf("Admit right after (-want +got):\n%s", diff)
			}
			if _, waiting := c.core.Reader().WaitCode(p1.UID); waiting != tc.wantWaiting {
				t.Errorf("p1 waiting in the core = %v, want %v", waiting, tc.wantWaiting)
			}
			clk.Step(quota.DefaultInitialBackoff)
			retried := false
			for _, a := range c.core.Admit() {
				retried = retried || (a.Pod.Name == "p1" && !tc.wantWaiting)
			}
			if retried != tc.wantRetried {
				t.Errorf("p1's admission handed out again after a backoff = %v, want %v", retried, tc.wantRetried)
			}
			if n := len(rec.Events); n != tc.wantEvents {
				t.Errorf("%d Admitted events, want %d", n, tc.wantEvents)
			}
		})
	}
}

// showCore gives the controller's core each pod as api has it now (its resourceVersion
// included), as the informer would.
func showCore(ctx context.Context, t *testing.T, c *Controller, api client.Reader, now time.Time, pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		fresh := &corev1.Pod{}
		if err := api.Get(ctx, client.ObjectKeyFromObject(p), fresh); err != nil {
			t.Fatal(err)
		}
		c.core.UpsertPod(quota.NewPod(fresh, v1alpha1.SchedulingGate, now))
	}
}

func gatedPod(name string, created int) *corev1.Pod {
	return podtest.New(name).NS("ns").UID("uid-"+name).At(time.Date(2026, 1, 1, 0, 0, created, 0, time.UTC)).
		Gated().Container("c", "").Req("cpu=2").Obj()
}

// relabel is a concurrent writer's update of the pod: a new resourceVersion.
func relabel(ctx context.Context, c client.Client, obj client.Object) error {
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), pod); err != nil {
		return err
	}
	pod.Labels = map[string]string{"touched": pod.ResourceVersion}
	return c.Update(ctx, pod)
}

// useAPI points the controller at a (fake) API server instead of its manager's clients
// and caches: api for writes, cached reads and the pod store; its fresh reads fail with
// "connection refused" when freshReadsFail.
func useAPI(c *Controller, api client.Client, freshReadsFail bool, rec *events.FakeRecorder) {
	c.client, c.reader, c.apiReader, c.recorder = api, api, api, rec
	c.waits.recorder = rec
	if freshReadsFail {
		c.apiReader = interceptedReader{api, errors.New("connection refused")}
	}
	c.pods = readerPods{api}
	c.evictions = c.newEvictor()
	c.records = c.newRecordWriter()
	c.status = c.newStatusWriter()
}

type interceptedReader struct {
	client.Reader
	err error
}

func (r interceptedReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return r.err
}

// TestCatchUpCountsTheOldLeadersUngates: a standby's cache still shows p2 gated, but the
// leader before it ungated p2 just before it died. The new leader reads fresh before it
// admits, so p2 is charged and p1, first in line, does not take the room p2 holds.
func TestCatchUpCountsTheOldLeadersUngates(t *testing.T) {
	ctx := t.Context()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p1, p2 := gatedPod("p1", 1), gatedPod("p2", 2)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{v1alpha1.EnabledLabel: "true"}}}
	api := fake.NewClientBuilder().WithObjects(ns, p1, p2).Build()
	c, err := New(Options{Gate: v1alpha1.SchedulingGate, Workers: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	useAPI(c, api, false, events.NewFakeRecorder(10))
	c.core.SetNamespace("ns", ns.Labels)
	c.core.UpsertBudget(quota.Budget{Key: quota.BudgetKey{Namespace: "ns", Name: "b"}, Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}})
	for _, p := range []*corev1.Pod{p1, p2} {
		stale := &corev1.Pod{}
		if err := api.Get(ctx, client.ObjectKeyFromObject(p), stale); err != nil {
			t.Fatal(err)
		}
		c.onPod(stale, false) // what the standby's informer delivered
	}
	// The old leader's last patch, which this replica's informer has not delivered.
	patched := &corev1.Pod{}
	if err := api.Get(ctx, client.ObjectKeyFromObject(p2), patched); err != nil {
		t.Fatal(err)
	}
	patch, _ := gates.UngatePatch(patched, v1alpha1.SchedulingGate, nil)
	if err := api.Patch(ctx, patched, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		t.Fatal(err)
	}

	n, err := c.catchUp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("caught up with %d pods, want 2", n)
	}
	if adm := c.core.Admit(); len(adm) != 0 {
		t.Errorf("admitted %v into the room p2 holds", adm)
	}
}

// readerPods is the pod informer's store over a client, for tests without informers:
// each lookup reads the pod and keeps what the transform would.
type readerPods struct{ client.Reader }

func (r readerPods) GetByKey(key string) (any, bool, error) {
	ns, name, _ := strings.Cut(key, "/")
	pod := &corev1.Pod{}
	if err := r.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return compactPod(pod), true, nil
}
