package estimator

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
)

// Settings is what every simulation of the manager's queue runs with, the estimator's
// passes and the what-ifs alike: one value from the manager's options, which both
// hold, so that the two cannot disagree on a setting.
type Settings struct {
	Clock clock.Clock
	// Gate is the scheduling gate a simulated pod waits at.
	Gate string
	// MaxPods is the most pods one simulation takes: with more in the pod cache the
	// estimator publishes no start and a what-if estimates none. 0 is no bound.
	MaxPods int
	// Core configures each simulation's core as the real one is configured.
	Core []quota.Option
}

// Caches is where a simulation's world comes from: the manager's informer caches, as
// the core sees them. Building a world takes none of the core's locks.
type Caches interface {
	// Pods is how many pods the pod cache holds.
	Pods() int
	// World is a builder of the world the caches hold at now: every budget, namespace
	// and flavor, the pods that hold quota and the gated pods, each expected by l, and
	// the pods still to come that a draws (none for nil). pace, when set, is called
	// every few hundred pods, as between the steps of a simulation.
	World(ctx context.Context, now time.Time, l *estimate.Learner, a *estimate.Arrivals, pace func()) (*estimate.WorldBuilder, error)
	// AddPods adds to b count pods made from pod, as the pod cache would hold them at
	// now, the i-th named and identified by name(i).
	AddPods(b *estimate.WorldBuilder, pod *corev1.Pod, count int, now time.Time, name func(i int) (string, types.UID))
}
