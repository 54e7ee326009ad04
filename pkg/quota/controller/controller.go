package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/controller/internal/estimator"
)

// RBAC of the manager, generated into config/rbac/role.yaml. No update or delete on
// pods: the gate is removed with patch only, and preemption evicts (evictor).
//
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=quotagate.io,resources=budgets;clusterbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=quotagate.io,resources=budgets/status;clusterbudgets/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=quotagate.io,resources=flavors,verbs=get;list;watch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Controller feeds the admission core from informers and carries out its decisions.
type Controller struct {
	opts      Options
	core      *quota.AdmissionQueue
	metrics   *metrics
	client    client.Client
	reader    client.Reader // the informers' cache
	pods      podStore      // the pod informer's cache, of cachedPods
	apiReader client.Reader // the API server itself, for fresh (quorum) reads
	recorder  recorder.EventRecorder
	// flavorNesting writes the Flavors' Nested conditions.
	flavorNesting *flavorNesting
	// conditions writes the gated pods' condition of why they wait.
	conditions *podConditions
	// claims are the DRA objects pods use, and pins the claims pinned for admitted pods
	// (claimPins); both nil when resource.k8s.io/v1 is not served.
	claims *claimIndex
	// dependencies is what the manager knows of the objects pods wait for
	// (dependencyIndex); nil only in unit tests that build a Controller by hand.
	dependencies *dependencyIndex
	pins         *claimPins
	// estimates is the estimator; nil when it is off.
	estimates *estimator.Estimator
	// whatIfs answers the what-ifs (SimulatePods).
	whatIfs *estimator.WhatIfs

	// kick wakes the admission loop. It holds at most one pending signal, so a burst of
	// events costs one round.
	kick chan struct{}

	registrations []toolscache.ResourceEventHandlerRegistration
	synced        atomic.Bool
	// leading is set while this replica runs the admission loop: only the leader's
	// queues are evaluated, so only its snapshot tells the truth.
	leading atomic.Bool

	// evictions carries out the core's preemptions (evictor).
	evictions *evictor
	// records writes the charge labels of running pods no manager admitted
	// (recordWriter).
	records *recordWriter
	// status writes the budgets' status and events (statusWriter).
	status *statusWriter
	// windows feeds the core each budget's effective spec, with its open windows
	// (budgetWindows).
	windows *budgetWindows

	// waits tells gated pods why they wait (waitNotices).
	waits *waitNotices

	// mu guards deleted.
	mu sync.Mutex
	// deleted records pods deleted while a catch-up read is under way, so that the
	// read's older copy of a pod does not bring it back (nil otherwise).
	deleted map[types.UID]struct{}

	// tallies are the admissions since each budget's last Admitted event.
	tallies *admittedTallies
}

// New returns a Controller; SetupWithManager connects it.
func New(opts Options) (*Controller, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		opts:       opts,
		metrics:    m,
		kick:       make(chan struct{}, 1),
		tallies:    newAdmittedTallies(opts.AdmittedEventInterval),
		conditions: newPodConditions(nil, opts.Clock),
	}
	c.estimates, c.whatIfs = newSimulations(&opts, m)
	c.core = quota.NewAdmissionQueue(append(opts.coreOptions(),
		quota.WithClock(opts.Clock),
		quota.WithFlushInterval(opts.FlushInterval),
		quota.WithObserver(c.metrics),
	)...)
	c.windows = newBudgetWindows(c.core, opts.Clock, c.wake)
	c.waits = newWaitNotices(c.core, opts.Clock, opts.WaitingEventsPerBudget, c.conditions)
	return c, nil
}

// Core exposes the admission core, for the queue snapshot and tests.
func (c *Controller) Core() *quota.AdmissionQueue { return c.core }

// CacheOptions returns the cache settings the controller needs: pods kept as the
// little the manager reads of them (CompactPod), the objects pods wait for as their
// status (dependencyTransform), managed fields dropped from everything else. The pod cache then holds no *corev1.Pod: read pods through the API
// reader, never through the manager's cached client.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:                   {Transform: CompactPod},
			&batchv1.Job{}:                  {Transform: dependencyTransform},
			&appsv1.Deployment{}:            {Transform: dependencyTransform},
			&corev1.PersistentVolumeClaim{}: {Transform: dependencyTransform},
			metadataOnly("Secret"):          {Transform: dependencyTransform},
			metadataOnly("ConfigMap"):       {Transform: dependencyTransform},
		},
	}
}

// podStore is where the controller finds pods by key ("namespace/name"): the pod
// informer's store.
type podStore interface {
	GetByKey(key string) (item any, exists bool, err error)
}

// SetupWithManager registers the informer handlers and the leader-only admission loop.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	c.client = mgr.GetClient()
	c.reader = mgr.GetCache()
	c.apiReader = mgr.GetAPIReader()
	c.recorder = c.opts.Recorder
	if c.recorder == nil {
		c.recorder = mgr.GetEventRecorder(eventSource)
	}
	c.flavorNesting = newFlavorNesting(c.client, c.reader, c.core.FlavorNesting, c.recorder, c.opts.Clock)
	c.conditions.client = c.client
	c.waits.recorder = c.recorder
	c.evictions = c.newEvictor()
	c.records = c.newRecordWriter()
	c.status = c.newStatusWriter()
	c.windows.client, c.windows.reader, c.windows.recorder = c.client, c.reader, c.recorder

	ctx := context.Background()
	for _, h := range []struct {
		obj     client.Object
		handler toolscache.ResourceEventHandler
	}{
		{&corev1.Namespace{}, c.namespaceHandler()},
		{&v1alpha1.Budget{}, c.budgetHandler()},
		{&v1alpha1.ClusterBudget{}, c.clusterBudgetHandler()},
		{&v1alpha1.Flavor{}, c.flavorHandler()},
		{&v1alpha1.BudgetWindow{}, c.budgetWindowHandler()},
		{&v1alpha1.ClusterBudgetWindow{}, c.clusterBudgetWindowHandler()},
		{&corev1.Pod{}, c.podHandler()},
	} {
		inf, err := mgr.GetCache().GetInformer(ctx, h.obj)
		if err != nil {
			return fmt.Errorf("getting informer for %T: %w", h.obj, err)
		}
		if _, isPod := h.obj.(*corev1.Pod); isPod {
			withStore, ok := inf.(interface{ GetStore() toolscache.Store })
			if !ok {
				return fmt.Errorf("the pod informer (%T) has no store to read", inf)
			}
			c.pods = withStore.GetStore()
		}
		reg, err := inf.AddEventHandler(h.handler)
		if err != nil {
			return fmt.Errorf("adding handler for %T: %w", h.obj, err)
		}
		c.registrations = append(c.registrations, reg)
	}
	if err := c.setupClaims(ctx, mgr); err != nil {
		return err
	}
	if err := c.setupDependencies(ctx, mgr); err != nil {
		return err
	}
	if err := mgr.Add(manager.RunnableFunc(c.run)); err != nil {
		return err
	}
	if err := mgr.Add(c.windows); err != nil {
		return err
	}
	c.connectSimulations()
	if c.estimates == nil {
		return nil
	}
	if _, ok := c.pods.(podLister); !ok {
		return fmt.Errorf("the pod informer's store (%T) cannot list", c.pods)
	}
	for _, h := range (estimatorFeed{c.estimates, c.opts.Clock, c.opts.Gate}).handlers() {
		inf, err := mgr.GetCache().GetInformer(ctx, h.obj)
		if err != nil {
			return fmt.Errorf("getting informer for %T: %w", h.obj, err)
		}
		if _, err := inf.AddEventHandler(h.handler); err != nil {
			return fmt.Errorf("adding the estimator's handler for %T: %w", h.obj, err)
		}
	}
	// Leader only, as the admission loop: only the leader's views are answered.
	return mgr.Add(c.estimates)
}

// ReadyCheck is the readiness probe: ready once every informer delivered its list.
func (c *Controller) ReadyCheck(_ *http.Request) error {
	if !c.handlersSynced() {
		return errors.New("informers have not synced yet")
	}
	return nil
}

func (c *Controller) handlersSynced() bool {
	if c.synced.Load() {
		return true
	}
	for _, r := range c.registrations {
		if !r.HasSynced() {
			return false
		}
	}
	c.synced.Store(len(c.registrations) > 0)
	return c.synced.Load()
}

// run is the leader's loop. Nothing is admitted before every informer has delivered its
// initial list to the core: until then a budget's usage is unknown.
func (c *Controller) run(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("quota")
	ctx = log.IntoContext(ctx, logger)
	logger.Info("Waiting for informers to sync before admitting")
	if !toolscache.WaitForCacheSync(ctx.Done(), c.handlersSynced) {
		return errors.New("informers did not sync")
	}
	// A new leader's cache may not yet show the last ungates of the leader before it
	// (their patches may have been applied just before it died): read every pod that
	// matters fresh from the API server first, so that each of them is counted.
	if err := c.catchUpUntilDone(ctx); err != nil {
		return nil // stopped while catching up
	}
	logger.Info("Informers synced and caught up with the API server; admitting")
	c.leading.Store(true)
	defer c.leading.Store(false)
	// From here on this replica's series tell the truth: export them.
	defer c.metrics.gate.lead()()

	// The estimator yields to admission (pacing.Yield): the loop tells it of each
	// pass and of each admission until its worker is done, with atomics only.
	yield := c.estimates.Yield()
	work := make(chan quota.Admission, c.opts.Workers*4)
	var wg sync.WaitGroup
	for range c.opts.Workers {
		wg.Go(func() {
			for a := range work {
				c.ungate(ctx, a)
				yield.UngateDone()
			}
		})
	}
	wg.Go(func() { c.status.run(ctx) })
	wg.Go(func() { c.records.run(ctx) })
	wg.Go(func() { c.flavorNesting.run(ctx) })
	wg.Go(func() { c.windows.runStatus(ctx) })
	wg.Go(func() { c.conditions.run(ctx) })
	if c.pins != nil {
		wg.Go(func() { c.pins.run(ctx) })
	}
	defer wg.Wait()
	defer close(work)

	timer := c.opts.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		admissions := c.core.Admit()
		yield.AdmissionPass()
		for _, a := range admissions {
			yield.HandedOut()
			select {
			case work <- a:
			case <-ctx.Done():
				yield.UngateDone()
				return nil
			}
		}
		c.evictions.start(ctx, &wg)
		c.status.signal()
		c.records.signal()
		next := time.Hour
		if t, ok := c.core.NextWakeup(); ok {
			next = max(t.Sub(c.opts.Clock.Now()), time.Millisecond)
		}
		resetTimer(timer, next)
		select {
		case <-ctx.Done():
			return nil
		case <-c.kick:
		case <-timer.C():
		}
	}
}

// resetTimer makes timer fire after d, dropping a firing it has not delivered yet.
func resetTimer(timer clock.Timer, d time.Duration) {
	if !timer.Stop() {
		select {
		case <-timer.C():
		default:
		}
	}
	timer.Reset(d)
}

// wake asks the admission loop for another round.
func (c *Controller) wake() { signal(c.kick) }

// signal wakes the loop that waits on ch, a channel of capacity 1, without waiting: a
// wake-up already pending covers this one.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
