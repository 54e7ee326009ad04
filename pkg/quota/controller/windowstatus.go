package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/window"
)

// The leader's side of budgetWindows: each window's status (open, next change, Ready),
// its Warning when it becomes not Ready, and the WindowStarted and WindowEnded events on
// its budget. Feeding the core is budgetWindows', on every replica.

// runStatus writes the windows' status, and the events of their starts and ends, until
// ctx ends. The leader runs it. A write that fails is tried again after
// statusRetryInterval.
func (w *budgetWindows) runStatus(ctx context.Context) {
	logger := log.FromContext(ctx)
	for {
		w.mu.Lock()
		refs := make([]windowRef, 0, len(w.dirty))
		for ref := range w.dirty {
			refs = append(refs, ref)
		}
		clear(w.dirty)
		w.mu.Unlock()
		var retry <-chan time.Time
		for _, ref := range refs {
			if err := w.writeStatus(ctx, ref); err != nil {
				if ctx.Err() != nil {
					return
				}
				logger.Error(err, "Writing window status failed; will retry", "window", ref.Namespace+"/"+ref.Name)
				w.mu.Lock()
				w.dirty[ref] = struct{}{}
				w.mu.Unlock()
				retry = w.clock.After(statusRetryInterval)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		case <-retry:
		}
	}
}

// windowView is what writeStatus needs of a window, read under mu.
type windowView struct {
	known   bool // the window is still there
	state   window.State
	budget  client.Object // nil when the budget does not exist
	key     quota.BudgetKey
	problem *window.Problem
}

func (w *budgetWindows) view(ref windowRef) windowView {
	w.mu.Lock()
	defer w.mu.Unlock()
	key, ok := w.budgetOf[ref]
	if !ok {
		return windowView{}
	}
	v := windowView{known: true, key: key, budget: w.written[key]}
	if res, ok := w.results[key]; ok {
		v.state = res.States[ref.Name]
	} else {
		v.state = window.StateAt(w.windows[key][ref.Name].Spec, w.clock.Now())
	}
	v.problem = v.state.Problem
	if v.problem == nil && v.budget == nil {
		kind := "Budget " + key.Name + " in namespace " + key.Namespace
		if ref.isCluster() {
			kind = "ClusterBudget " + key.Name
		}
		v.problem = &window.Problem{Reason: v1alpha1.ReasonBudgetNotFound,
			Message: kind + " does not exist: the window changes nothing until it is created"}
	}
	return v
}

// writeStatus writes one window's status, with an event on its budget when it opened
// or closed since the status last written, and a Warning on the window when it
// becomes not Ready.
func (w *budgetWindows) writeStatus(ctx context.Context, ref windowRef) error {
	v := w.view(ref)
	if !v.known {
		return nil
	}
	var obj client.Object
	var status *v1alpha1.BudgetWindowStatus
	if ref.isCluster() {
		cw := &v1alpha1.ClusterBudgetWindow{}
		obj, status = cw, &cw.Status
	} else {
		bw := &v1alpha1.BudgetWindow{}
		obj, status = bw, &bw.Status
	}
	if err := w.reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	before := obj.DeepCopyObject().(client.Object)
	wasOpen := status.Open
	wasReady := apimeta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionReady) ||
		apimeta.FindStatusCondition(status.Conditions, v1alpha1.ConditionReady) == nil
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: obj.GetGeneration(),
		LastTransitionTime: metav1.NewTime(w.clock.Now())}
	status.ObservedGeneration = obj.GetGeneration()
	if v.problem != nil {
		status.Open, status.NextChange = false, nil
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, v.problem.Reason, v.problem.Message
	} else {
		status.Open, status.NextChange = v.state.Open, apiTime(v.state.Next)
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, v1alpha1.ReasonScheduled, scheduledMessage(v.state)
	}
	apimeta.SetStatusCondition(&status.Conditions, ready)
	if !equality.Semantic.DeepEqual(before, obj) {
		if err := w.client.Status().Patch(ctx, obj, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("patching status of window %s/%s: %w", ref.Namespace, ref.Name, err)
		}
	}
	if v.problem != nil && wasReady {
		w.recorder.Eventf(obj, nil, corev1.EventTypeWarning, v.problem.Reason, "Validate", "%s", v.problem.Message)
	}
	if v.budget != nil && wasOpen != status.Open {
		reason, verb := v1alpha1.EventWindowEnded, "ended"
		if status.Open {
			reason, verb = v1alpha1.EventWindowStarted, "started"
		}
		w.recorder.Eventf(v.budget, obj, corev1.EventTypeNormal, reason, "Window", "Window %s %s; next change %s", ref.Name, verb, nextText(v.state.Next))
	}
	return nil
}

func scheduledMessage(st window.State) string {
	switch {
	case st.Open:
		return "Open until " + nextText(st.Next)
	case st.Next.IsZero():
		return "Will not open again"
	default:
		return "Opens at " + nextText(st.Next)
	}
}

func nextText(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339)
}
