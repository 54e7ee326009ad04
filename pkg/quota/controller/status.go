package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// statusRoundInterval bounds how often the status writer runs: a burst of admissions
// becomes one status write per budget, not one per pod.
const statusRoundInterval = 200 * time.Millisecond

// statusRetryInterval is how long the status writer sleeps without a signal before it
// retries failed writes.
const statusRetryInterval = 10 * time.Second

// statusWriter writes the status of every budget the core marked dirty, then has the
// pod events that say why pods wait and the budgets' Admitted events written (announce).
// It runs on the leader only.
type statusWriter struct {
	core     *quota.AdmissionQueue
	metrics  *metrics
	reader   client.Reader // the informers' cache
	client   client.Client
	recorder recorder.EventRecorder
	clock    clock.Clock
	// tallies say when a budget's Admitted event is due (announceAdmitted writes it);
	// waits tells the gated pods why they wait (waitNotices.announce).
	tallies *admittedTallies
	waits   *waitNotices
	// timeout bounds each event write (the manager's --ungate-timeout).
	timeout time.Duration
	// windows says which windows of a budget are open and when they next change.
	windows *budgetWindows
	// kick wakes run; it holds at most one signal.
	kick chan struct{}
}

// newStatusWriter returns the status writer of c, once c has its clients and recorder.
func (c *Controller) newStatusWriter() *statusWriter {
	return &statusWriter{core: c.core, metrics: c.metrics, reader: c.reader, client: c.client,
		recorder: c.recorder, clock: c.opts.Clock, tallies: c.tallies, waits: c.waits, timeout: c.opts.UngateTimeout, windows: c.windows,
		kick: make(chan struct{}, 1)}
}

// signal wakes run.
func (w *statusWriter) signal() { signal(w.kick) }

// run writes statuses and events until ctx ends.
func (w *statusWriter) run(ctx context.Context) {
	logger := log.FromContext(ctx)
	var retry []quota.BudgetKey
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		case <-w.clock.After(w.tallies.next(w.clock.Now(), statusRetryInterval)):
			// A failed write is retried even when nothing else changes, and a budget's
			// Admitted event is written when due.
		}
		keys := append(retry, w.core.DirtyStatuses()...)
		retry = nil
		w.metrics.setReasons(w.core.Reader().WaitingByCode())
		for _, key := range keys {
			if err := w.write(ctx, key); err != nil {
				if ctx.Err() != nil {
					return // stopping: the next leader writes it
				}
				logger.Error(err, "Writing budget status failed; will retry", "budget", key.String())
				retry = append(retry, key)
			}
		}
		w.waits.announce()
		w.announceAdmitted(ctx)
		select {
		case <-ctx.Done():
			return
		case <-w.clock.After(statusRoundInterval):
		}
	}
}

// write writes one budget's status, and an event when its state changed.
func (w *statusWriter) write(ctx context.Context, key quota.BudgetKey) error {
	st, ok := w.core.Reader().Status(key)
	if !ok {
		return nil
	}
	w.metrics.setBudget(key, st)
	var obj client.Object
	var status *v1alpha1.BudgetStatus
	if key.IsCluster() {
		cb := &v1alpha1.ClusterBudget{}
		obj, status = cb, &cb.Status
	} else {
		b := &v1alpha1.Budget{}
		obj, status = b, &b.Status
	}
	if err := w.reader.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name}, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	before := obj.DeepCopyObject().(client.Object)
	oldState := status.State
	applyStatus(status, st, key.Namespace, obj.GetGeneration(), metav1.NewTime(w.clock.Now()))
	status.ActiveWindows, status.NextWindowChange = w.windows.budgetStatus(key)
	w.metrics.setWindows(key, len(status.ActiveWindows))
	if equality.Semantic.DeepEqual(before, obj) {
		return nil
	}
	if err := w.client.Status().Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patching status of %s: %w", key.Describe(), err)
	}
	if oldState != status.State {
		eventType := corev1.EventTypeNormal
		if st.Problem != nil {
			eventType = corev1.EventTypeWarning
		}
		w.recorder.Eventf(obj, nil, eventType, "State"+string(status.State), "UpdateStatus", "%s", st.StateMessage)
	}
	return nil
}

// applyStatus sets status from what the core reports for a budget of namespace ns ("" for
// a ClusterBudget); conditions keep their transition time unless their status flips.
func applyStatus(status *v1alpha1.BudgetStatus, st quota.BudgetStatus, ns string, generation int64, now metav1.Time) {
	status.State = st.State
	status.Hard = st.Hard
	status.Used = st.Used
	status.Pending = st.Pending
	status.Borrowed = st.Borrowed
	status.Lent = st.Lent
	status.AdmittedPods = st.AdmittedPods
	status.GatedPods = st.GatedPods
	status.Flavors = flavorStatuses(st.Flavors)
	status.ReclaimingAfterWindow = st.ReclaimingAfter
	status.Usage = usageStatus(st.Usage)
	status.FairSharing = fairSharingStatus(st.FairSharing)
	status.ObservedGeneration = generation

	ready := metav1.Condition{
		Type:               v1alpha1.ConditionReady,
		Status:             metav1.ConditionTrue,
		Reason:             st.StateReason,
		Message:            st.StateMessage,
		ObservedGeneration: generation,
		LastTransitionTime: now,
	}
	if st.State != v1alpha1.StateOpen {
		ready.Status = metav1.ConditionFalse
	}
	if st.Problem != nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, st.Problem.Reason, st.Problem.Message
	}
	if ready.Reason == "" {
		ready.Reason = v1alpha1.ReasonActive
	}
	apimeta.SetStatusCondition(&status.Conditions, ready)

	neverFit := metav1.Condition{
		Type:               v1alpha1.ConditionPodsNeverFit,
		Status:             metav1.ConditionFalse,
		Reason:             v1alpha1.ReasonAllPodsCanFit,
		Message:            "Every gated pod requests no more than hard",
		ObservedGeneration: generation,
		LastTransitionTime: now,
	}
	if len(st.NeverFit) > 0 {
		neverFit.Status = metav1.ConditionTrue
		neverFit.Reason = neverFitReason(st.NeverFit)
		neverFit.Message = neverFitMessage(st.NeverFit, ns)
	}
	apimeta.SetStatusCondition(&status.Conditions, neverFit)
}

// flavorStatuses converts the core's per-flavor status (nil for none).
func flavorStatuses(in []quota.FlavorStatus) []v1alpha1.FlavorStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]v1alpha1.FlavorStatus, len(in))
	for i, f := range in {
		out[i] = v1alpha1.FlavorStatus{
			Name: f.Name, Hard: f.Hard, Used: f.Used, Borrowed: f.Borrowed, Lent: f.Lent,
		}
	}
	return out
}

// neverFitMessage names up to five pods that can never fit, and how many more there
// are. Only a pod of the budget's namespace ns is named: a ClusterBudget's status is
// read by whoever may see cluster-wide limits, not only by the namespaces of its pods
// (docs/guarantees.md, "Tenants see only their own"); its pods are counted and
// described by what they ask.
func neverFitMessage(pods []quota.NeverFitPod, ns string) string {
	const shown = 5
	parts := make([]string, 0, shown)
	for i, p := range pods {
		if i == shown {
			break
		}
		who := "a pod"
		switch {
		case p.Pod.Namespace != ns && p.Group != "":
			who = "a group"
		case p.Pod.Namespace != ns:
		case p.Group != "":
			who = "group " + p.Group + " (pod " + p.Pod.String() + ")"
		default:
			who = "pod " + p.Pod.String()
		}
		if p.Unset != "" {
			parts = append(parts, unsetPart(who, p, ns))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s requests %s %s, more than hard %s", who, p.Requested.String(), p.Resource, p.Hard.String()))
	}
	msg := strings.Join(parts, "; ")
	if len(pods) > shown {
		msg += fmt.Sprintf("; and %d more", len(pods)-shown)
	}
	if neverFitReason(pods) == v1alpha1.ReasonMustSpecifyResources {
		return msg + ": as in ResourceQuota, every container must set the cpu and memory values hard tracks; they stay gated until hard stops tracking them or they are deleted"
	}
	return msg + ": they stay gated until hard is raised or they are deleted"
}

// neverFitReason is RequestsExceedHard when some pod requests more than hard, else
// MustSpecifyResources: every pod listed leaves unset a value hard tracks.
func neverFitReason(pods []quota.NeverFitPod) string {
	for _, p := range pods {
		if p.Unset == "" {
			return v1alpha1.ReasonRequestsExceedHard
		}
	}
	return v1alpha1.ReasonMustSpecifyResources
}

// unsetPart is ResourceQuota's sentence for one pod, or for the member of its group
// that leaves the value unset.
func unsetPart(who string, p quota.NeverFitPod, ns string) string {
	if p.Member != "" && p.Member != p.Pod.Name && p.Pod.Namespace == ns {
		who += ": member " + p.Member
	}
	return who + " " + p.Unset
}
