package visibility

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/log"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/internal/loglevel"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
)

// Simulator answers a what-if: the manager's controller (SimulatePods). It adds count
// pods made from tmpl, gated and created now in namespace, to the world its estimator
// builds from its caches, and asks a fresh core of its own, never the real one.
type Simulator interface {
	SimulatePods(ctx context.Context, namespace string, tmpl *corev1.PodTemplateSpec, count int) (estimate.WhatIf, error)
}

// WithSimulator has the handler answer podsimulations with s (nil: they answer 503).
func WithSimulator(s Simulator) HandlerOption {
	return func(o *handlerOptions) { o.simulator = s }
}

// NotEstimated is EstimatedStart.Unknown of a simulated pod whose start was not
// estimated: the estimator is off, the manager holds more pods than it simulates, or
// the simulation ran out of time.
const NotEstimated = "NotEstimated"

// WithSimulationLimits bounds the handler's podsimulations (DefaultSimulationLimits
// when not given).
func WithSimulationLimits(l SimulationLimits) HandlerOption {
	return func(o *handlerOptions) { o.simulationLimits = &l }
}

var podSimulationsResource = schema.GroupResource{Group: visv1.GroupName, Resource: visv1.ResourcePodSimulations}

// podSimulationsPath reads GroupVersionPath/namespaces/NS/podsimulations and, for
// the 405 it answers, GroupVersionPath/namespaces/NS/podsimulations/NAME (named true).
func podSimulationsPath(path string) (namespace string, named, ok bool) {
	rest, ok := strings.CutPrefix(path, GroupVersionPath+"/namespaces/")
	if !ok {
		return "", false, false
	}
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	if len(parts) < 2 || len(parts) > 3 || parts[1] != visv1.ResourcePodSimulations || parts[0] == "" {
		return "", false, false
	}
	return parts[0], len(parts) == 3, true
}

// podSimulations answers the what-if: POST a PodSimulation, get it back with its
// status. It expects the request to be authenticated and authorized already (create
// podsimulations in the namespace, and create pods there: simulationAccess).
//
// Each request is bounded (SimulationLimits): a body, a count or a number of
// containers beyond the limits is refused before anything is simulated; a simulation
// runs only in a free slot, one per namespace, and a request that finds none is
// answered 429 at once; it stops when its client goes away or its time is up. The order
// of the checks: the method, the body's size (before a slot is taken), the slot, then
// the body's content.
type podSimulations struct {
	simulator Simulator // nil: not served
	limits    SimulationLimits
	slots     *simulationSlots
}

func newPodSimulations(s Simulator, l *SimulationLimits) *podSimulations {
	limits := DefaultSimulationLimits()
	if l != nil {
		limits = *l
	}
	return &podSimulations{simulator: s, limits: limits, slots: newSimulationSlots(limits.Concurrency)}
}

// simulationTimedOut is the cause of a simulation's end when its time is up.
type simulationTimedOut struct{ limit time.Duration }

func (e simulationTimedOut) Error() string {
	return fmt.Sprintf("the simulation ran longer than its limit of %s (--simulation-timeout)", e.limit)
}

func (h *podSimulations) serve(w http.ResponseWriter, r *http.Request, namespace string, named bool) {
	if r.Method != http.MethodPost || named {
		err := apierrors.NewMethodNotSupported(podSimulationsResource, r.Method)
		err.ErrStatus.Message = fmt.Sprintf("podsimulations are created only (POST %s/namespaces/%s/podsimulations): nothing is stored to %s", GroupVersionPath, namespace, strings.ToLower(r.Method))
		writeError(w, err)
		return
	}
	if h.simulator == nil {
		writeError(w, apierrors.NewServiceUnavailable("this server does not simulate pods"))
		return
	}
	// The body is read before a slot is taken, so that a client that sends it slowly
	// holds no slot meanwhile; it is decoded after, so that what-ifs refused for want
	// of one cost no decoding.
	data, err := readSimulationBody(w, r, h.limits)
	if err != nil {
		writeError(w, err)
		return
	}
	release, refused := h.slots.acquire(namespace)
	if refused != "" {
		writeTooManyRequests(w, refused)
		return
	}
	defer release()
	sim, count, err := decodeSimulation(data, namespace, h.limits)
	if err != nil {
		writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeoutCause(r.Context(), h.limits.Timeout, simulationTimedOut{h.limits.Timeout})
	defer cancel()
	whatIf, err := h.simulator.SimulatePods(ctx, namespace, &sim.Spec.Template, count)
	switch {
	case err != nil && r.Context().Err() != nil:
		// The client went away: nobody reads an answer.
		log.FromContext(r.Context()).V(loglevel.Events).Info("Pod simulation stopped: its client went away", "namespace", namespace)
		return
	case err != nil && ctx.Err() != nil:
		writeError(w, apierrors.NewTimeoutError(context.Cause(ctx).Error()+": where the pods would wait is not known", 0))
		return
	case err != nil:
		writeError(w, err)
		return
	}
	// The moment the pods are supposed created, rounded to the second as their
	// estimated starts are (EstimatedStartOf): clients read the starts against it, and
	// a pod that fits now starts exactly then.
	sim.CreationTimestamp = metav1.NewTime(whatIf.Now.Round(time.Second))
	sim.Status = SimulationStatusOf(whatIf)
	writeJSON(w, http.StatusCreated, sim)
}

// readSimulationBody reads r's body: at most MaxBodyBytes of it (413 beyond), within
// the simulation's Timeout (408 past it), so that a client that sends it slowly holds
// no goroutine of the server for longer than a simulation would.
func readSimulationBody(w http.ResponseWriter, r *http.Request, limits SimulationLimits) ([]byte, error) {
	limit := limits.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, bodyTooLarge(r.ContentLength, limit)
	}
	// Not every connection takes a deadline (ErrNotSupported): those read as they can.
	// The deadline is lifted once the body is read: the server still reads, to learn
	// whether the client goes away while the simulation runs.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(limits.Timeout))
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		_ = r.Body.Close() // the connection is closed after the answer, the rest unread
	}
	_ = rc.SetReadDeadline(time.Time{})
	if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
		return nil, bodyTooLarge(0, limit)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusRequestTimeout, Reason: metav1.StatusReasonTimeout,
			Message: fmt.Sprintf("the PodSimulation's body did not arrive within %s (--simulation-timeout)", limits.Timeout)}}
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the body: %v", err))
	}
	return data, nil
}

// decodeSimulation decodes a PodSimulation for namespace and checks it: the answer's
// object (its kind, namespace and count set) and how many pods it asks about, within
// limits.
func decodeSimulation(data []byte, namespace string, limits SimulationLimits) (*visv1.PodSimulation, int, error) {
	sim := &visv1.PodSimulation{}
	if err := json.Unmarshal(data, sim); err != nil {
		return nil, 0, apierrors.NewBadRequest(fmt.Sprintf("the body is not a PodSimulation (JSON, apiVersion %s): %v", visv1.GroupVersion, err))
	}
	if sim.Kind != "" && sim.Kind != visv1.KindPodSimulation || sim.APIVersion != "" && sim.APIVersion != visv1.GroupVersion.String() {
		return nil, 0, apierrors.NewBadRequest(fmt.Sprintf("the body is a %s %s, not a %s %s", sim.APIVersion, sim.Kind, visv1.GroupVersion, visv1.KindPodSimulation))
	}
	if sim.Namespace != "" && sim.Namespace != namespace {
		return nil, 0, apierrors.NewBadRequest(fmt.Sprintf("the PodSimulation's namespace %q is not the request's %q", sim.Namespace, namespace))
	}
	count := int(sim.Spec.Count)
	switch {
	case count < 0:
		return nil, 0, apierrors.NewBadRequest(fmt.Sprintf("spec.count %d must not be negative", count))
	case count == 0:
		count = 1
	}
	if len(sim.Spec.Template.Spec.Containers) == 0 {
		return nil, 0, apierrors.NewBadRequest("spec.template.spec.containers is empty: a pod needs at least one container")
	}
	if err := limits.checkSize(&sim.Spec.Template, count); err != nil {
		return nil, 0, err
	}
	sim.TypeMeta = metav1.TypeMeta{APIVersion: visv1.GroupVersion.String(), Kind: visv1.KindPodSimulation}
	sim.Namespace, sim.Spec.Count = namespace, int32(count)
	return sim, count, nil
}

// SimulationStatusOf is the API's view of a what-if: per simulated pod, the budgets
// that would cover it, its place and reason, and its estimated start. Like the core's
// answers it is built from, it names no other pod.
func SimulationStatusOf(w estimate.WhatIf) visv1.PodSimulationStatus {
	st := visv1.PodSimulationStatus{Pods: make([]visv1.SimulatedPod, 0, len(w.Pods))}
	for i, p := range w.Pods {
		pl := w.Placements[i]
		out := visv1.SimulatedPod{
			Name:       p.Name,
			Priority:   p.Priority,
			Requests:   p.Usage.DeepCopy(),
			Admitted:   pl.Admitted,
			Flavor:     pl.Flavor,
			Preempts:   int64(pl.Preempts),
			Held:       pl.Wait.Held,
			ReasonCode: string(pl.Reason.Code),
			Reason:     pl.Reason.Message,
			Budgets:    []visv1.BudgetPlace{},
		}
		if len(out.Requests) == 0 {
			out.Requests = nil
		}
		if pl.Admitted {
			for _, b := range pl.Budgets {
				out.Budgets = append(out.Budgets, budgetPlace(b, 0, 0, ""))
			}
		} else {
			for _, place := range pl.Wait.Places {
				out.Budgets = append(out.Budgets, budgetPlace(place.Budget, place.Position, place.Total, place.Queue))
			}
		}
		switch {
		case w.Starts != nil:
			out.EstimatedStart = EstimatedStartOf(w.Starts[i])
		case w.NoStarts != "":
			out.EstimatedStart = &visv1.EstimatedStart{Unknown: NotEstimated, Message: w.NoStarts}
		}
		st.Pods = append(st.Pods, out)
	}
	return st
}

func budgetPlace(k quota.BudgetKey, position, total int, queue quota.Queue) visv1.BudgetPlace {
	kind := "Budget"
	if k.IsCluster() {
		kind = "ClusterBudget"
	}
	return visv1.BudgetPlace{BudgetKind: kind, Namespace: k.Namespace, Name: k.Name, Position: int64(position), Total: int64(total), Queue: string(queue)}
}
