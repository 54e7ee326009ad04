package controller_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/gates"
)

// oraclePair is a namespace with a Budget and one with a ResourceQuota of the same
// hard, in which a test does the same things. kube-controller-manager's ResourceQuota
// controller is the oracle: after each step both must show the same used, except for
// the deliberate oracleDifferences.
type oraclePair struct {
	budgetNS, quotaNS string
	markers           int
}

// oracleName names the Budget and the ResourceQuota.
const oracleName = "oracle"

// oracleDifference is a deliberate difference: what a Budget shows under a name,
// computed from the ResourceQuota's used, and why (docs/budgets.md says the same).
type oracleDifference struct {
	why         string
	budgetShows func(quotaUsed corev1.ResourceList) resource.Quantity
}

// oracleDifferences are the deliberate differences, by ResourceQuota name.
var oracleDifferences = map[corev1.ResourceName]oracleDifference{
	"count/pods": {
		why: "a ResourceQuota's count/pods counts the pod objects stored, finished and past-grace ones included; " +
			"a Budget counts it like pods: it limits what runs, and a pod object exists before a Budget admits it",
		budgetShows: func(used corev1.ResourceList) resource.Quantity { return used[corev1.ResourcePods] },
	},
}

// oracleBudgetName is the name under which a Budget's status shows a name of hard: the
// bare cpu, memory, ephemeral-storage and hugepages-<size> mean their requests.* forms
// and are shown under them only, once.
func oracleBudgetName(name corev1.ResourceName) corev1.ResourceName {
	switch s := string(name); {
	case name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage,
		strings.HasPrefix(s, corev1.ResourceHugePagesPrefix):
		return corev1.DefaultResourceRequestsPrefix + name
	}
	return name
}

// newOraclePair makes the two namespaces, the Budget and the ResourceQuota, and starts
// a manager. It returns once the ResourceQuota's status is known (its admission
// refuses pods before) and the Budget's status shows its hard.
func newOraclePair(t *testing.T, hard corev1.ResourceList) *oraclePair {
	t.Helper()
	o := &oraclePair{budgetNS: newNamespace(t, true), quotaNS: newNamespace(t, false)}
	mustCreate(t,
		budget(o.budgetNS, oracleName, hard, ""),
		&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: o.quotaNS, Name: oracleName}, Spec: corev1.ResourceQuotaSpec{Hard: hard}},
	)
	startManager(t, nil, false)
	testbed.Poll(t, time.Minute, "the ResourceQuota's and the Budget's status", func(context.Context) (bool, error) {
		rq, err := clientset.CoreV1().ResourceQuotas(o.quotaNS).Get(t.Context(), oracleName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(rq.Status.Hard) == len(hard) && len(getStatus(t, o.budgetNS, oracleName).Hard) > 0, nil
	})
	return o
}

// both runs do in the Budget's namespace, then in the ResourceQuota's.
func (o *oraclePair) both(do func(ns string)) {
	do(o.budgetNS)
	do(o.quotaNS)
}

// podIn is p in ns: gated in the Budget's namespace, as the webhook makes it.
func (o *oraclePair) podIn(ns string, p oraclePod) *corev1.Pod {
	b := podtest.New(p.name).NS(ns).Label("shape", p.shape).Spec(*p.spec.DeepCopy())
	if p.hold {
		b.Finalizers(holdFinalizer)
	}
	if ns == o.budgetNS {
		b.Gated()
	}
	return b.Obj()
}

// create creates each pod in both namespaces; both must accept it.
func (o *oraclePair) create(t *testing.T, pods ...oraclePod) {
	t.Helper()
	for _, p := range pods {
		o.both(func(ns string) { mustCreate(t, o.podIn(ns, p)) })
	}
}

// compare settles both namespaces after a step and fails the test for every
// difference between the Budget's used and the ResourceQuota's.
func (o *oraclePair) compare(t *testing.T, step string) {
	t.Helper()
	if diffs := o.diffs(t, step); len(diffs) > 0 {
		t.Errorf("After %s the Budget's used differs from the ResourceQuota's:\n%s", step, strings.Join(diffs, "\n"))
	}
}

// diffs waits until both namespaces have settled after a step, then compares the
// Budget's used with the ResourceQuota's under every name the quota tracks. To know
// that both controllers have seen everything before it, it creates a marker pod in
// both: informers deliver in order, so once the ResourceQuota's recount includes the
// marker its used includes every earlier change, and once the Budget has admitted it,
// likewise.
func (o *oraclePair) diffs(t *testing.T, step string) []string {
	t.Helper()
	o.markers++
	marker := oraclePod{name: fmt.Sprintf("marker-%d", o.markers), shape: "marker", spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "registry.invalid/app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("8Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("8Mi")},
		},
	}}}}
	// ResourceQuota's controller recounts a namespace on a pod's delete or end, not on
	// a create (its admission charges those), and a recount of the step's own changes
	// that read its cache before the marker came can overwrite the marker's charge.
	// Deleting a barrier made after the marker makes it recount with the marker in.
	barrier := marker
	barrier.name = fmt.Sprintf("barrier-%d", o.markers)
	o.create(t, marker, barrier)
	o.both(func(ns string) { deletePod(t, ns, barrier.name, 0) })

	// The ResourceQuota controller writes a recount only when it differs from the
	// status in its informer's cache (syncResourceQuota's dirty check), and that cache
	// can still hold a status older than the admission charges that followed it: a
	// recount equal to the stale status is not written, and the charge stays until the
	// next pod delete or its 5-minute full resync. While its counts disagree with the
	// API server's, another barrier deleted every 10 s makes it recount again with a
	// fresher cache. The Budget's side gets no such help.
	nudged, nudges := time.Now(), 0
	var budgetUsed, quotaUsed, hard corev1.ResourceList
	testbed.Poll(t, time.Minute, "both namespaces to settle after "+step, func(context.Context) (bool, error) {
		b, q, h, why := o.settled(t, marker.name)
		if strings.HasPrefix(why, quotaBehind) && time.Since(nudged) > 10*time.Second {
			nudges++
			nudge := marker
			nudge.name = fmt.Sprintf("barrier-%d-%d", o.markers, nudges)
			mustCreate(t, o.podIn(o.quotaNS, nudge))
			deletePod(t, o.quotaNS, nudge.name, 0)
			nudged = time.Now()
			t.Logf("After %s the ResourceQuota still disagreed with the API server (%s); nudged its recount with %s", step, why, nudge.name)
		}
		if why != "" {
			return false, testbed.NotYet(errors.New(why))
		}
		same := budgetUsed != nil && equalQuantities(b, budgetUsed) && equalQuantities(q, quotaUsed)
		budgetUsed, quotaUsed, hard = b, q, h
		if !same {
			return false, testbed.NotYet(errors.New("used not yet the same on two reads in a row"))
		}
		return true, nil
	})
	return oracleDiffs(hard, budgetUsed, quotaUsed)
}

// settled reads both sides and says why they have not settled yet ("" when they have):
// the marker must be admitted, the Budget's status must count the pods as the API
// server lists them and the ResourceQuota's used must count them too.
func (o *oraclePair) settled(t *testing.T, marker string) (budgetUsed, quotaUsed, hard corev1.ResourceList, why string) {
	t.Helper()
	now := time.Now()
	bPods := oracleCount(podsOf(t, o.budgetNS), now)
	if bPods.gatedNames[marker] {
		return nil, nil, nil, "the Budget has not admitted " + marker
	}
	b := &v1alpha1.Budget{}
	if err := admin.Get(t.Context(), client.ObjectKey{Namespace: o.budgetNS, Name: oracleName}, b); err != nil {
		return nil, nil, nil, err.Error()
	}
	if b.Status.ObservedGeneration != b.Generation || int(b.Status.AdmittedPods) != bPods.charged || int(b.Status.GatedPods) != len(bPods.gatedNames) {
		return nil, nil, nil, fmt.Sprintf("the Budget shows %d admitted and %d gated, the API server %d charged and %d gated",
			b.Status.AdmittedPods, b.Status.GatedPods, bPods.charged, len(bPods.gatedNames))
	}
	rq, err := clientset.CoreV1().ResourceQuotas(o.quotaNS).Get(t.Context(), oracleName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, nil, err.Error()
	}
	qPods := oracleCount(podsOf(t, o.quotaNS), now)
	stored, charged := rq.Status.Used[corev1.ResourceName("count/pods")], rq.Status.Used[corev1.ResourcePods]
	if stored.Value() != int64(qPods.stored) || charged.Value() != int64(qPods.charged) {
		return nil, nil, nil, fmt.Sprintf(quotaBehind+" %s pods and %s charged, the API server %d and %d",
			stored.String(), charged.String(), qPods.stored, qPods.charged)
	}
	return b.Status.Used, rq.Status.Used, rq.Status.Hard, ""
}

// quotaBehind begins the reason settled gives while the ResourceQuota's counts differ
// from the API server's.
const quotaBehind = "the ResourceQuota counts"

// oracleCounts are a namespace's pods as both controllers should count them.
type oracleCounts struct {
	stored, charged int
	gatedNames      map[string]bool
}

// oracleCount counts pods as ResourceQuota does: charged unless terminal or past its
// deletion grace period, and for a Budget only once ungated.
func oracleCount(pods []corev1.Pod, now time.Time) oracleCounts {
	c := oracleCounts{stored: len(pods), gatedNames: map[string]bool{}}
	for i := range pods {
		p := &pods[i]
		if gates.HasGate(p, v1alpha1.SchedulingGate) {
			c.gatedNames[p.Name] = true
			continue
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil &&
			now.After(p.DeletionTimestamp.Add(time.Duration(*p.DeletionGracePeriodSeconds)*time.Second)) {
			continue
		}
		c.charged++
	}
	return c
}

// oracleDiffs compares, for every name of the ResourceQuota's hard, the Budget's used
// (under oracleBudgetName) with the ResourceQuota's, or with what a deliberate
// difference says the Budget shows.
func oracleDiffs(hard, budgetUsed, quotaUsed corev1.ResourceList) []string {
	var diffs []string
	for _, name := range slices.Sorted(maps.Keys(hard)) {
		want, basis := quotaUsed[name], "the ResourceQuota's"
		if d, ok := oracleDifferences[name]; ok {
			want, basis = d.budgetShows(quotaUsed), "by a deliberate difference ("+d.why+"; the ResourceQuota shows "+quotaString(quotaUsed, name)+")"
		}
		got, ok := budgetUsed[oracleBudgetName(name)]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("  %s: the Budget shows no %s, want %s, %s", name, oracleBudgetName(name), want.String(), basis))
			continue
		}
		if got.Cmp(want) != 0 {
			diffs = append(diffs, fmt.Sprintf("  %s: the Budget shows %s, want %s, %s", name, got.String(), want.String(), basis))
		}
	}
	return diffs
}

func quotaString(l corev1.ResourceList, name corev1.ResourceName) string {
	q := l[name]
	return q.String()
}

// equalQuantities reports whether two lists have the same names with equal values.
func equalQuantities(a, b corev1.ResourceList) bool {
	return len(a) == len(b) && !slices.ContainsFunc(slices.Collect(maps.Keys(a)), func(n corev1.ResourceName) bool {
		q, ok := b[n]
		return !ok || q.Cmp(a[n]) != 0
	})
}

// holdFinalizer keeps a deleted pod stored while a test looks at it terminating.
const holdFinalizer = "quotagate.io/oracle-hold"

// release removes holdFinalizer from a pod in both namespaces, if it is still there.
func (o *oraclePair) release(t *testing.T, name string) {
	t.Helper()
	o.both(func(ns string) {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
		err := admin.Patch(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, patch)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("removing the finalizer of %s/%s: %v", ns, name, err)
		}
	})
}
