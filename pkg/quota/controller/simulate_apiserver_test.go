package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/controller"
	"github.com/quotagate/quotagate/pkg/quota/controller/internal/estimator"
)

// The what-if on a real API server, through the manager's caches: a Budget of 1 CPU
// runs a pod that declares 10 minutes, another waits behind it declaring 5. Two
// simulated pods of 1 CPU queue behind the waiting one (positions 2 and 3 of 3) and
// start when it ends (15 and 16 minutes after the first started); one of a
// PriorityClass of 1000 goes ahead of it (position 1 of 2) and starts when the first
// ends. Nothing is created, and an unknown PriorityClass is a BadRequest.
func TestSimulatePodsOnRealAPIServer(t *testing.T) {
	ns, m, started := startDeclaredFirst(t)
	mustCreate(t, declaredPod(ns, "second", "5m"))
	urgent := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-urgent"}, Value: 1000}
	mustCreate(t, urgent)
	t.Cleanup(func() { _ = admin.Delete(context.Background(), urgent) })

	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "train-", Annotations: map[string]string{v1alpha1.ExpectedDurationAnnotation: "1m"}},
		Spec:       gatedPod(ns, "", "1").Spec,
	}
	tmpl.Spec.SchedulingGates = nil // as in a workload's template: the webhook adds the gate
	type answer struct {
		Names  []string
		Places []string
		Starts []time.Duration // after the first started
	}
	ask := func(tmpl *corev1.PodTemplateSpec, count int) answer {
		t.Helper()
		var a answer
		var last string
		testbed.Poll(t, time.Minute, "the manager's caches hold the second pod", func(ctx context.Context) (bool, error) {
			w, err := m.ctrl.SimulatePods(ctx, ns, tmpl, count)
			if err != nil {
				return false, err
			}
			a = answer{}
			for i, p := range w.Pods {
				a.Names = append(a.Names, p.Name)
				for _, pl := range w.Placements[i].Wait.Places {
					a.Places = append(a.Places, fmt.Sprintf("%s %d/%d %s", pl.Budget.Name, pl.Position, pl.Total, w.Placements[i].Reason.Code))
				}
				if s := w.Starts[i]; s.Known {
					a.Starts = append(a.Starts, s.Median.Sub(started))
				}
			}
			last = fmt.Sprintf("%+v", a)
			// Until the caches hold the second pod, the simulated pods are one ahead.
			return len(a.Places) == count && len(a.Starts) == count && strings.Contains(a.Places[count-1], fmt.Sprintf("/%d ", count+1)), nil
		})
		t.Logf("the answer: %s", last)
		return a
	}
	got := ask(&tmpl, 2)
	want := answer{
		Names:  []string{"train-simulated-0", "train-simulated-1"},
		Places: []string{"team 2/3 " + string(quota.CodeInsufficient), "team 3/3 " + string(quota.CodeInsufficient)},
		Starts: []time.Duration{15 * time.Minute, 16 * time.Minute},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("two simulated pods (-want +got):\n%s", diff)
	}
	high := *tmpl.DeepCopy()
	high.Spec.PriorityClassName = urgent.Name
	got = ask(&high, 1)
	want = answer{Names: []string{"train-simulated-0"}, Places: []string{"team 1/2 " + string(quota.CodeInsufficient)}, Starts: []time.Duration{10 * time.Minute}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a simulated pod of priority 1000 (-want +got):\n%s", diff)
	}
	unknown := *tmpl.DeepCopy()
	unknown.Spec.PriorityClassName = "no-such-class"
	if _, err := m.ctrl.SimulatePods(t.Context(), ns, &unknown, 1); !apierrors.IsBadRequest(err) {
		t.Errorf("an unknown PriorityClass: got %v, want BadRequest", err)
	}
	var pods corev1.PodList
	if err := admin.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Errorf("the namespace holds %d pods after the simulations, want the 2 created", len(pods.Items))
	}
}

// With the estimator off, the what-if still says where the pods would wait and why,
// and that no start is estimated.
func TestSimulatePodsWithTheEstimatorOff(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "team", cpu("1"), ""))
	m := startManager(t, func(o *controller.Options) { o.EstimateInterval = 0 }, false)
	tmpl := corev1.PodTemplateSpec{Spec: gatedPod(ns, "", "1").Spec}
	var got []string
	var last estimate.WhatIf
	testbed.Poll(t, time.Minute, "the manager's caches hold the Budget", func(ctx context.Context) (bool, error) {
		w, err := m.ctrl.SimulatePods(ctx, ns, &tmpl, 2)
		if err != nil {
			return false, err
		}
		got, last = nil, w
		for i, p := range w.Placements {
			s := fmt.Sprintf("%s admitted=%v %s", w.Pods[i].Name, p.Admitted, p.Reason.Code)
			for _, pl := range p.Wait.Places {
				s += fmt.Sprintf(" %s %d/%d", pl.Budget.Name, pl.Position, pl.Total)
			}
			got = append(got, s)
		}
		return len(w.Placements) == 2 && w.Placements[0].Admitted, nil
	})
	want := []string{"simulated-0 admitted=true " + string(quota.CodeFits), "simulated-1 admitted=false " + string(quota.CodeInsufficient) + " team 1/1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the simulation (-want +got):\n%s", diff)
	}
	if last.Starts != nil || last.NoStarts != estimator.NoStartsEstimatorOff {
		t.Errorf("starts %v, NoStarts %q; want none and %q", last.Starts, last.NoStarts, estimator.NoStartsEstimatorOff)
	}
}

// A what-if's template is read once: five pods of 200 containers of 10m each are each
// charged 2 CPUs, under names and UIDs of their own, and all fit in a Budget of 100.
// A what-if whose request has ended answers an error and creates nothing.
func TestSimulatePodsOfManyContainers(t *testing.T) {
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "team", cpu("100"), ""))
	m := startManager(t, nil, false)
	tmpl := corev1.PodTemplateSpec{Spec: gatedPod(ns, "", "10m").Spec}
	for i := 1; i < 200; i++ {
		c := *tmpl.Spec.Containers[0].DeepCopy()
		c.Name = fmt.Sprintf("c-%d", i)
		tmpl.Spec.Containers = append(tmpl.Spec.Containers, c)
	}
	type pod struct {
		Name, CPU, Code string
		Admitted        bool
	}
	var got []pod
	uids := map[string]bool{}
	testbed.Poll(t, time.Minute, "the manager's caches hold the Budget", func(ctx context.Context) (bool, error) {
		w, err := m.ctrl.SimulatePods(ctx, ns, &tmpl, 5)
		if err != nil {
			return false, err
		}
		got, uids = nil, map[string]bool{}
		for i, p := range w.Pods {
			cpu := p.Usage[corev1.ResourceRequestsCPU]
			got = append(got, pod{Name: p.Name, CPU: cpu.String(), Code: string(w.Placements[i].Reason.Code), Admitted: w.Placements[i].Admitted})
			uids[string(p.UID)] = true
		}
		return len(got) == 5 && got[4].Admitted, nil
	})
	var want []pod
	for i := range 5 {
		want = append(want, pod{Name: fmt.Sprintf("simulated-%d", i), CPU: "2", Code: string(quota.CodeFits), Admitted: true})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("five pods of 200 containers (-want +got):\n%s", diff)
	}
	if len(uids) != 5 {
		t.Errorf("the five simulated pods have %d UIDs, want one each", len(uids))
	}

	gone, cancel := context.WithCancel(t.Context())
	cancel()
	if w, err := m.ctrl.SimulatePods(gone, ns, &tmpl, 5); err == nil {
		t.Errorf("a what-if whose request ended answered %d placements, want an error", len(w.Placements))
	}
	var pods corev1.PodList
	if err := admin.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("the namespace holds %d pods after the what-ifs, want none", len(pods.Items))
	}
}
