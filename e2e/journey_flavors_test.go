//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/test/localcluster"
)

// The flavors step: its namespace, the node label that makes a pool, and the taint on
// the spot pool.
const (
	flavorNS  = "team-flavors"
	poolLabel = "pool.e2e.quotagate.io/name"
)

var (
	spotTaint      = corev1.Taint{Key: "e2e.quotagate.io/spot", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	spotToleration = corev1.Toleration{Key: spotTaint.Key, Operator: corev1.TolerationOpEqual, Value: spotTaint.Value, Effect: spotTaint.Effect}
)

// flavorPool is a node pool, the Flavor that names it, and the Budget's CPU on it.
type flavorPool struct {
	flavor *v1alpha1.Flavor
	nodes  []string
	cpu    string
}

// testFlavors is quota per kind of node, through the installed chart: two pools of
// kwok nodes, spot (tainted) and on-demand, a Flavor for each (spot's tolerates the
// taint), and a Budget with 3 CPU on spot, then 2 on on-demand. A burst of seven
// one-CPU Jobs fills spot, falls back to on-demand, and the last two wait, gated, with
// a reason a tenant reads that names spot, the flavor they would take first. When a
// spot Job goes, a waiting pod takes its room there. A watcher checks at every pod
// event that no flavor runs more than its hard.
//
// The nodes and Flavors go at the end, once the step's pods are gone: the later steps'
// pods would otherwise be placed on the untainted pool, and lose their node with it.
func testFlavors(t *testing.T, e env, _ *podWatcher) {
	ctx := t.Context()
	pools := []flavorPool{
		{flavor: flavorFor("spot", spotToleration), nodes: []string{"spot-0", "spot-1"}, cpu: "3"},
		{flavor: flavorFor("on-demand"), nodes: []string{"on-demand-0", "on-demand-1"}, cpu: "2"},
	}
	var cluster []client.Object
	for _, p := range pools {
		cluster = append(cluster, p.flavor)
		for _, n := range p.nodes {
			cluster = append(cluster, poolNode(n, p.flavor.Name, p.flavor.Name == "spot"))
		}
	}
	t.Cleanup(func() { deleteAll(t, e, cluster) }) // when the step fails half-way
	for _, o := range cluster {
		fatalIf(t, e.c.Create(ctx, o), fmt.Sprintf("creating %T %s", o, o.GetName()))
	}

	fatalIf(t, e.c.Create(ctx, enabledNamespace(flavorNS)), "creating namespace "+flavorNS)
	b := budget(flavorNS, "team", v1alpha1.StateOpen, corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("8")})
	var limits []testbed.FlavorLimit
	for _, p := range pools {
		hard := corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(p.cpu)}
		b.Spec.Flavors = append(b.Spec.Flavors, v1alpha1.FlavorQuota{Name: p.flavor.Name, Hard: hard})
		limits = append(limits, testbed.FlavorLimit{Name: p.flavor.Name, NodeLabels: p.flavor.Spec.NodeLabels, Hard: hard})
	}
	w := watchFlavoredPods(ctx, t, e.cs, flavorNS, b.Spec.Hard, limits)
	fatalIf(t, e.c.Create(ctx, b), "creating the Budget with flavors")
	const jobs = 7
	for n := range jobs {
		j := job(flavorNS, jobSpec{name: fmt.Sprintf("train-%d", n), cpu: "1", runFor: time.Hour})
		// A deleted pod's room frees when it is gone or its grace period ends, and kwok
		// removes it at a random moment within that period: one second, not thirty.
		j.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
		fatalIf(t, e.c.Create(ctx, j), "creating Job")
	}

	waitFor(t, "3 pods running on spot, 2 on on-demand, 2 gated", 2*time.Minute, func() (bool, string) {
		return podsOnFlavors(t, e, pools, map[string]int{"spot": 3, "on-demand": 2}, 2)
	})
	waitFor(t, "the Budget's status.flavors to count each flavor's pods", time.Minute, func() (bool, string) {
		return flavorsUsed(t, e, "spot=3 on-demand=2")
	})

	// The pods beyond both flavors: a tenant asks why they wait.
	plugin := buildPlugin(t)
	viewer := tenantKubeconfigIn(t, e, flavorNS, "viewer", "view")
	for _, p := range listPods(t, e, flavorNS) {
		if !hasGate(&p) {
			continue
		}
		var why string
		waitFor(t, "`kubectl quotagate why "+p.Name+"` to name the flavor it waits for", time.Minute, func() (bool, string) {
			out, errOut, err := runPlugin(t, plugin, viewer, "why", p.Name, "-n", flavorNS)
			why = out
			return err == nil && strings.Contains(out, "on flavor spot"), out + errOut
		})
		t.Logf("kubectl quotagate why %s -n %s:\n%s", p.Name, flavorNS, why)
	}

	// A spot Job goes: a waiting pod takes its room, on spot.
	var spotJob string
	for _, p := range listPods(t, e, flavorNS) {
		if p.Spec.NodeSelector[poolLabel] == "spot" {
			spotJob = p.Labels["job-name"]
			break
		}
	}
	fatalIf(t, e.c.Delete(ctx, flavorJob(spotJob), client.PropagationPolicy(metav1.DeletePropagationBackground)), "deleting Job "+spotJob)
	waitFor(t, "a waiting pod to take "+spotJob+"'s room on spot", 2*time.Minute, func() (bool, string) {
		return podsOnFlavors(t, e, pools, map[string]int{"spot": 3, "on-demand": 2}, 1)
	})
	waitFor(t, "the Budget's status.flavors to count it", time.Minute, func() (bool, string) {
		return flavorsUsed(t, e, "spot=3 on-demand=2")
	})

	r := w.Report()
	for _, v := range r.Violations {
		t.Errorf("a flavor ran more than its hard %s", v)
	}
	for _, p := range pools {
		name := corev1.ResourceName(string(corev1.ResourceRequestsCPU) + "@" + p.flavor.Name)
		if peak := r.Peak[name]; peak.Cmp(resource.MustParse(p.cpu)) != 0 {
			t.Errorf("peak CPU on %s %s, want its whole hard %s used at some point", p.flavor.Name, peak.String(), p.cpu)
		}
	}
	var peaks []string
	for name, q := range r.Peak {
		peaks = append(peaks, string(name)+"="+q.String())
	}
	slices.Sort(peaks)
	t.Logf("The watcher checked %d pod events; peaks %s", r.Events, strings.Join(peaks, " "))

	var left []client.Object
	for n := range jobs {
		left = append(left, flavorJob(fmt.Sprintf("train-%d", n)))
	}
	deleteAll(t, e, left)
	waitFor(t, "the step's pods to be gone", 2*time.Minute, func() (bool, string) {
		n := len(listPods(t, e, flavorNS))
		return n == 0, fmt.Sprintf("%d pods left", n)
	})
	deleteAll(t, e, append(cluster, b))
}

// podsOnFlavors checks the step's pods: want[flavor] admitted pods on each flavor and
// gated ones gated. An admitted pod is on a flavor when its nodeSelector carries the
// flavor's labels; it must also carry the flavor's tolerations, and run on a node of
// the flavor's pool. A pod being deleted is left out.
func podsOnFlavors(t *testing.T, e env, pools []flavorPool, want map[string]int, gated int) (bool, string) {
	t.Helper()
	got, waiting := map[string]int{}, 0
	for _, p := range listPods(t, e, flavorNS) {
		if p.DeletionTimestamp != nil {
			continue
		}
		if hasGate(&p) {
			waiting++
			continue
		}
		i := slices.IndexFunc(pools, func(fp flavorPool) bool {
			return maps.Equal(p.Spec.NodeSelector, fp.flavor.Spec.NodeLabels)
		})
		if i < 0 {
			t.Fatalf("admitted pod %s has nodeSelector %v: the labels of no flavor", p.Name, p.Spec.NodeSelector)
		}
		pool := pools[i]
		tolerates := slices.ContainsFunc(p.Spec.Tolerations, func(tl corev1.Toleration) bool { return tl.MatchToleration(&spotToleration) })
		if spot := pool.flavor.Name == "spot"; tolerates != spot {
			t.Fatalf("pod %s on flavor %s carries spot's toleration: %v, want %v (tolerations %v)", p.Name, pool.flavor.Name, tolerates, spot, p.Spec.Tolerations)
		}
		if p.Spec.NodeName != "" && !slices.Contains(pool.nodes, p.Spec.NodeName) {
			t.Fatalf("pod %s on flavor %s runs on node %s, not one of %v", p.Name, pool.flavor.Name, p.Spec.NodeName, pool.nodes)
		}
		if p.Status.Phase != corev1.PodRunning {
			return false, fmt.Sprintf("pod %s on flavor %s is %s on node %q", p.Name, pool.flavor.Name, p.Status.Phase, p.Spec.NodeName)
		}
		got[pool.flavor.Name]++
	}
	return maps.Equal(got, want) && waiting == gated, fmt.Sprintf("running on each flavor %v, %d gated", got, waiting)
}

// flavorsUsed checks status.flavors[].used requests.cpu of the step's Budget, as
// "spot=N on-demand=M".
func flavorsUsed(t *testing.T, e env, want string) (bool, string) {
	t.Helper()
	var b v1alpha1.Budget
	fatalIf(t, e.c.Get(t.Context(), client.ObjectKey{Namespace: flavorNS, Name: "team"}, &b), "reading the Budget")
	var got []string
	for _, f := range b.Status.Flavors {
		used := f.Used[corev1.ResourceRequestsCPU]
		got = append(got, f.Name+"="+used.String())
	}
	return strings.Join(got, " ") == want, "status.flavors used " + strings.Join(got, " ")
}

// flavorJob names a Job of the step, to delete it.
func flavorJob(name string) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: flavorNS, Name: name}}
}

// flavorFor is the Flavor of the pool named name: its nodes carry poolLabel=name.
func flavorFor(name string, tolerations ...corev1.Toleration) *v1alpha1.Flavor {
	return &v1alpha1.Flavor{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.FlavorSpec{NodeLabels: map[string]string{poolLabel: name}, Tolerations: tolerations},
	}
}

// poolNode is a kwok node of a pool, with spotTaint when tainted.
func poolNode(name, pool string, tainted bool) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{localcluster.KwokNodeAnnotation: "fake"},
			Labels:      map[string]string{poolLabel: pool, corev1.LabelHostname: name, corev1.LabelOSStable: "linux"},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity.DeepCopy()},
	}
	if tainted {
		n.Spec.Taints = []corev1.Taint{spotTaint}
	}
	return n
}

// deleteAll deletes objs (their dependents in the background), ignoring those already gone.
func deleteAll(t *testing.T, e env, objs []client.Object) {
	t.Helper()
	for _, o := range objs {
		err := e.c.Delete(context.WithoutCancel(t.Context()), o, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %T %s: %v", o, o.GetName(), err)
		}
	}
}
