package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// +kubebuilder:rbac:groups=quotagate.io,resources=flavors/status,verbs=get;patch;update

// flavorNesting keeps each Flavor's Nested condition true (v1alpha1.FlavorObjectStatus):
// when one Flavor's labels contain another's, their nodes may be the same nodes, and a
// pod that can run on the narrower one is charged on both. It is told when a Flavor
// changes (changed) and writes the conditions that differ from what it computes, with
// a Warning event on a Flavor that becomes nested. The leader runs it.
type flavorNesting struct {
	client   client.Client // writes status
	reader   client.Reader // the cache: the Flavors
	nesting  func(name string) (contains, within []string)
	recorder recorder.EventRecorder
	clock    clock.Clock
	kick     chan struct{}
}

func newFlavorNesting(c client.Client, r client.Reader, nesting func(string) ([]string, []string), rec recorder.EventRecorder, clk clock.Clock) *flavorNesting {
	return &flavorNesting{client: c, reader: r, nesting: nesting, recorder: rec, clock: clk, kick: make(chan struct{}, 1)}
}

// changed says a Flavor was created, changed or deleted: every Flavor's condition may
// change with it.
func (n *flavorNesting) changed() {
	if n == nil {
		return // a controller that was never set up with a manager (unit tests)
	}
	signal(n.kick)
}

// run writes the conditions once, then after each change, until ctx ends. A write that
// fails is tried again after statusRetryInterval, or at the next change.
func (n *flavorNesting) run(ctx context.Context) {
	logger := log.FromContext(ctx)
	for {
		var retry <-chan time.Time
		if err := n.sync(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Writing Flavor conditions failed; will retry")
			retry = n.clock.After(statusRetryInterval)
		}
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		case <-retry:
		}
	}
}

// sync writes every Flavor's Nested condition that is not what it should be.
func (n *flavorNesting) sync(ctx context.Context) error {
	var list v1alpha1.FlavorList
	if err := n.reader.List(ctx, &list); err != nil {
		return fmt.Errorf("listing Flavors: %w", err)
	}
	var errs []error
	for i := range list.Items {
		f := &list.Items[i]
		want := nestedCondition(f.Name, f.Generation, n.nesting)
		have := apimeta.FindStatusCondition(f.Status.Conditions, v1alpha1.FlavorNested)
		if have != nil && have.Status == want.Status && have.Reason == want.Reason && have.Message == want.Message {
			continue
		}
		want.LastTransitionTime = metav1.NewTime(n.clock.Now())
		patched := f.DeepCopy()
		apimeta.SetStatusCondition(&patched.Status.Conditions, want)
		if err := n.client.Status().Patch(ctx, patched, client.MergeFrom(f)); err != nil {
			errs = append(errs, fmt.Errorf("flavor %s: %w", f.Name, client.IgnoreNotFound(err)))
			continue
		}
		if want.Status == metav1.ConditionTrue {
			n.recorder.Eventf(f, nil, corev1.EventTypeWarning, "NestedFlavors", "Nested", "%s", want.Message)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d Flavor conditions not written, first: %w", len(errs), errs[0])
	}
	return nil
}

// nestedCondition is the Nested condition of the named Flavor, as the core's Flavors
// say it.
func nestedCondition(name string, generation int64, nesting func(string) ([]string, []string)) metav1.Condition {
	contains, within := nesting(name)
	c := metav1.Condition{Type: v1alpha1.FlavorNested, ObservedGeneration: generation}
	var parts []string
	if len(contains) > 0 {
		parts = append(parts, fmt.Sprintf("the nodes of %s are among this Flavor's nodes (their labels contain its labels): a pod that can run on them is charged on both, and a pod on this Flavor is charged on them too unless their taints keep it off", flavorList(contains)))
	}
	if len(within) > 0 {
		parts = append(parts, fmt.Sprintf("this Flavor's nodes are among the nodes of %s (its labels contain theirs): a pod on it is charged on both", flavorList(within)))
	}
	switch {
	case len(contains) > 0:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonContainsFlavors
	case len(within) > 0:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonNestedIn
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.ReasonNotNested, "no other Flavor's labels contain this Flavor's, or are contained in them"
		return c
	}
	c.Message = strings.Join(parts, "; ") + ". To keep pods of one off the other, give the wider Flavor a label the narrower one's nodes do not have (spot: \"false\"), or the narrower one a taint"
	return c
}

// flavorList names Flavors in a sentence: "Flavor a", "Flavors a, b".
func flavorList(names []string) string {
	if len(names) == 1 {
		return "Flavor " + names[0]
	}
	return "Flavors " + strings.Join(names, ", ")
}
