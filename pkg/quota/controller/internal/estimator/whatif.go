package estimator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota/controller/internal/pacing"
)

// The what-if (the visibility API's podsimulations): pods that are not created, added
// to the world the estimator builds from the manager's caches, gated and created now,
// and asked of a fresh core (estimate.Suppose). The real core is never asked, nor its
// lock taken.
//
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list
// +kubebuilder:rbac:groups=visibility.quotagate.io,resources=podsimulations;podsimulations/forwarded,verbs=create

// NoStartsEstimatorOff is WhatIf.NoStarts when the estimator is off.
const NoStartsEstimatorOff = "the manager's estimator is off (--estimate-interval 0): no start is estimated"

// WhatIfs answers the what-ifs (SimulatePods). It holds nothing between them but the
// pacer that bounds the CPU they take together; the world of each is built afresh.
type WhatIfs struct {
	*Settings
	pacer *pacing.Pacer
	// estimator is the estimator, whose Learner and Arrivals a what-if draws on; nil
	// when it is off.
	estimator *Estimator

	// Set by Connect, once the manager's caches exist.
	apiReader client.Reader // the API server, for PriorityClasses
	caches    Caches
}

// NewWhatIfs is the what-if of a manager whose simulations run with settings, beside
// the estimator e (nil when it is off), taking together cpu of one CPU at most (no
// bound for 0). Connect must follow.
func NewWhatIfs(settings *Settings, cpu float64, e *Estimator) *WhatIfs {
	return &WhatIfs{Settings: settings, pacer: pacing.NewPacer(cpu), estimator: e}
}

// Connect gives the what-if what it reads once the manager's caches exist: the caches,
// and the API server's reader for PriorityClasses.
func (s *WhatIfs) Connect(caches Caches, apiReader client.Reader) {
	s.caches, s.apiReader = caches, apiReader
}

// SimulatePods answers what would happen to count pods made from tmpl if they were
// created now in namespace, gated: what the core would say of each at once, and, with
// the estimator on, when each would start. The pods' priority is their
// priorityClassName resolved as the API server's Priority admission does (an unknown
// class is a BadRequest); their durations are expected as a created pod's (their
// deadline, their expected-duration annotation, or what the Learner learned of their
// owner, from the template's ownerReferences). It reads the informers' caches and,
// for priority classes, the API server.
//
// It is bounded by ctx, which the visibility API ends when the request's client goes
// away or its time is up: the simulation stops at its next step. Cut short before the
// core's first decisions, it returns context.Cause(ctx); after them, the placements
// with NoStarts saying why no start is estimated. While it runs, it takes its part of
// the share of a CPU that what-ifs take together (Options.SimulationCPU).
//
// The template is read once: every simulated pod is one view of it under its own name
// and UID, so a pod of many containers costs its containers once, not count times, and
// nothing of it enters the tables that real pods share (quota.NewPodUnshared).
func (s *WhatIfs) SimulatePods(ctx context.Context, namespace string, tmpl *corev1.PodTemplateSpec, count int) (estimate.WhatIf, error) {
	if s.caches == nil {
		return estimate.WhatIf{}, errors.New("the what-if is not connected to the manager's caches yet")
	}
	now := s.Clock.Now()
	learner, arrivals, noStarts := (*estimate.Learner)(nil), (*estimate.Arrivals)(nil), ""
	if s.estimator != nil {
		learner, arrivals = s.estimator.learner, s.estimator.arrivals
	} else {
		learner, noStarts = estimate.NewLearner(0), NoStartsEstimatorOff
	}
	if limit := s.MaxPods; noStarts == "" && limit > 0 {
		if n := s.caches.Pods(); n > limit {
			noStarts = fmt.Sprintf("the manager holds %d pods, more than its estimator simulates (--estimate-max-pods %d): no start is estimated", n, limit)
		}
	}
	priority, err := s.priorityOf(ctx, &tmpl.Spec)
	if err != nil {
		return estimate.WhatIf{}, err
	}
	b, err := s.caches.World(ctx, now, learner, arrivals, nil)
	if err != nil {
		return estimate.WhatIf{}, err
	}
	if ctx.Err() != nil {
		return estimate.WhatIf{}, context.Cause(ctx)
	}
	run := string(uuid.NewUUID())
	s.caches.AddPods(b, simulatedPod(namespace, tmpl, count, now, s.Gate, priority), count, now, func(i int) (string, types.UID) {
		return simulatedName(tmpl, i, count), simulatedUID(run, i, count)
	})
	o := estimate.Options{Core: s.Core, Done: ctx.Done(), Pace: s.pacer.Pace(ctx)}
	w := estimate.Suppose(b.World(), o, count, noStarts)
	switch {
	case w.Placements == nil:
		return estimate.WhatIf{}, context.Cause(ctx)
	case w.Stopped:
		w.NoStarts = fmt.Sprintf("no start is estimated: %v", context.Cause(ctx))
	}
	return w, nil
}

// simulatedPod is the first of count pods made from tmpl, as the API server would have
// created it at now in namespace: gated by gate, with priority. The others differ only
// in their names (simulatedName) and UIDs.
func simulatedPod(namespace string, tmpl *corev1.PodTemplateSpec, count int, now time.Time, gate string, priority int32) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Namespace, pod.Name, pod.UID = namespace, simulatedName(tmpl, 0, count), ""
	pod.CreationTimestamp = metav1.NewTime(now)
	pod.ResourceVersion, pod.DeletionTimestamp = "", nil
	pod.Spec.Priority = &priority
	pod.Spec.NodeName = ""
	hasGate := false
	for _, g := range pod.Spec.SchedulingGates {
		hasGate = hasGate || g.Name == gate
	}
	if !hasGate {
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: gate})
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
	return pod
}

// simulatedUID is the UID of the i-th of count simulated pods of a run. The pods are
// created at one moment, and the core orders pods created together by UID: the index
// is zero-padded, so that they wait in the order they are listed (simulated-10 after
// simulated-9, not before simulated-2).
func simulatedUID(run string, i, count int) types.UID {
	return types.UID(fmt.Sprintf("simulated-%s-%0*d", run, len(strconv.Itoa(count-1)), i))
}

// simulatedName is the name of the i-th of count pods made from tmpl: the template's
// (a Pod's own name when it is the only one), else simulated-i.
func simulatedName(tmpl *corev1.PodTemplateSpec, i, count int) string {
	switch {
	case tmpl.Name != "" && count == 1:
		return tmpl.Name
	case tmpl.GenerateName != "":
		return tmpl.GenerateName + "simulated-" + strconv.Itoa(i)
	case tmpl.Name != "":
		return tmpl.Name + "-simulated-" + strconv.Itoa(i)
	}
	return "simulated-" + strconv.Itoa(i)
}

// priorityOf is the priority the API server's Priority admission gives a pod of spec:
// spec.priority when set, else its priorityClassName's value, else the value of the
// default PriorityClass (globalDefault; the lowest of several), else 0.
func (s *WhatIfs) priorityOf(ctx context.Context, spec *corev1.PodSpec) (int32, error) {
	if spec.Priority != nil {
		return *spec.Priority, nil
	}
	if name := spec.PriorityClassName; name != "" {
		var pc schedulingv1.PriorityClass
		if err := s.apiReader.Get(ctx, client.ObjectKey{Name: name}, &pc); err != nil {
			if apierrors.IsNotFound(err) {
				return 0, apierrors.NewBadRequest(fmt.Sprintf("no PriorityClass %q: the API server would refuse a pod that names it", name))
			}
			return 0, fmt.Errorf("reading PriorityClass %s: %w", name, err)
		}
		return pc.Value, nil
	}
	var list schedulingv1.PriorityClassList
	if err := s.apiReader.List(ctx, &list); err != nil {
		return 0, fmt.Errorf("listing PriorityClasses for the default: %w", err)
	}
	var def *schedulingv1.PriorityClass
	for i := range list.Items {
		if pc := &list.Items[i]; pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
			def = pc
		}
	}
	if def == nil {
		return 0, nil
	}
	return def.Value, nil
}
