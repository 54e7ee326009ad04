package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota/controller/internal/estimator"
)

// The estimator and the what-if (package estimator) are parts of their own beside the
// admission loop. The controller builds them from its Options (one estimator.Settings
// for both), connects them to its caches (worldSource), and feeds the estimator from
// its informers: every pod first seen ended teaches its Learner, every pod created
// through the gate its Arrivals, and any event of what a world is built from asks for a
// new pass.

// DefaultEstimateInterval is the least time between two estimator passes.
const DefaultEstimateInterval = estimator.DefaultInterval

// DefaultEstimateMaxPods is the most pods the estimator simulates by default
// (estimator.DefaultMaxPods).
const DefaultEstimateMaxPods = estimator.DefaultMaxPods

// newSimulations are the estimator (nil when opts turn it off) and the what-if of a
// manager with opts, recording to m.
func newSimulations(opts *Options, m *metrics) (*estimator.Estimator, *estimator.WhatIfs) {
	settings := &estimator.Settings{Clock: opts.Clock, Gate: opts.Gate, MaxPods: opts.EstimateMaxPods, Core: opts.coreOptions()}
	e := estimator.New(settings, opts.EstimateInterval, m.estimatorMetrics())
	return e, estimator.NewWhatIfs(settings, opts.SimulationCPU, e)
}

// connectSimulations gives the estimator and the what-if what they read once the
// manager's caches exist: the world's source (the caches, the pod cache among them);
// the estimator the event recorder and whether the informers synced, the what-if the
// API server's reader. SetupWithManager calls it, after the claims and the dependencies
// are set up.
func (c *Controller) connectSimulations() {
	source := c.worldSource()
	c.whatIfs.Connect(source, c.apiReader)
	if c.estimates != nil {
		c.estimates.Connect(source, c.recorder, c.handlersSynced)
	}
}

// EstimatedStart is a gated pod's estimated start as of the estimator's last pass;
// false when the estimator is off, has not run yet, or did not see the pod gated.
func (c *Controller) EstimatedStart(uid types.UID) (estimate.Start, bool) {
	return c.estimates.StartOf(uid)
}

// SimulatePods is the what-if of the visibility API's podsimulations
// (estimator.WhatIfs.SimulatePods).
func (c *Controller) SimulatePods(ctx context.Context, namespace string, tmpl *corev1.PodTemplateSpec, count int) (estimate.WhatIf, error) {
	return c.whatIfs.SimulatePods(ctx, namespace, tmpl, count)
}

// informerHandler is a handler for the informer of obj's type.
type informerHandler struct {
	obj     client.Object
	handler toolscache.ResourceEventHandler
}

// estimatorFeed is what the manager's informers tell the estimator.
type estimatorFeed struct {
	e     *estimator.Estimator
	clock clock.Clock
	gate  string
}

// handlers are the estimator's informer handlers: pods teach the Learner and Arrivals;
// any event of the objects a world is built from asks for a new pass.
func (f estimatorFeed) handlers() []informerHandler {
	changed := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { f.e.Changed() },
		UpdateFunc: func(_, _ any) { f.e.Changed() },
		DeleteFunc: func(any) { f.e.Changed() },
	}
	return []informerHandler{
		{&corev1.Namespace{}, changed},
		{&v1alpha1.Budget{}, changed},
		{&v1alpha1.ClusterBudget{}, changed},
		{&v1alpha1.Flavor{}, changed},
		{&corev1.Pod{}, f.podHandler()},
	}
}

// podHandler teaches the Learner each pod first seen ended, and Arrivals each pod's
// creation, and asks for a new pass on every pod event.
func (f estimatorFeed) podHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if cp, ok := obj.(*cachedPod); ok {
				f.learn(cp, nil)
				f.arrived(cp)
			}
			f.e.Changed()
		},
		UpdateFunc: func(old, obj any) {
			was, _ := old.(*cachedPod)
			if cp, ok := obj.(*cachedPod); ok && was != nil {
				f.learn(cp, was)
			}
			f.e.Changed()
		},
		DeleteFunc: func(any) { f.e.Changed() },
	}
}

// learn teaches the estimator a pod the first time it is seen ended (old is its
// previous version, nil for a pod seen for the first time): the informer's first list
// teaches the pods that ended before the manager started, an update the pods that end
// while it runs.
func (f estimatorFeed) learn(cp, old *cachedPod) bool {
	facts := cp.factsOf()
	if !facts.Ended || (old != nil && old.factsOf().Ended) {
		return false
	}
	return f.e.Learn(&facts, cp.view.AdmittedByKeys())
}

// arrived records a pod's creation in the estimator's Arrivals, once per pod (its
// first sight): a pod that carries the gate or was admitted through it, at its
// priority, with its view as a gated pod as the template of those to come.
func (f estimatorFeed) arrived(cp *cachedPod) {
	v := cp.at(f.clock.Now(), f.gate)
	if !v.Gated && !v.HasAdmittedBy {
		return
	}
	facts := cp.factsOf()
	f.e.Arrived(v, &facts)
}
