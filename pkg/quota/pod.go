package quota

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/gates"
	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
	"github.com/quotagate/quotagate/pkg/quota/window"
)

// PodRef names a pod.
type PodRef struct {
	UID       types.UID `json:"uid"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
}

// Compare orders pods by namespace, then name.
func (r PodRef) Compare(o PodRef) int {
	return cmp.Or(cmp.Compare(r.Namespace, o.Namespace), cmp.Compare(r.Name, o.Name))
}

// String returns namespace/name.
func (r PodRef) String() string { return r.Namespace + "/" + r.Name }

// Pod is what the admission core needs to know about a pod. Build it with NewPod.
type Pod struct {
	PodRef
	// ResourceVersion is the version of the pod this view was read at. The core
	// ignores a view older than one it already has (a fresh read may overtake the
	// informer), and it is how an uncertain ungate attempt is settled: a pod seen
	// still gated at a version newer than the attempt was not ungated by it.
	ResourceVersion string
	Labels          map[string]string
	// NodeSelector is what the pod asks of its node's labels: spec.nodeSelector, and
	// the single-value In requirements that every term of its required node affinity
	// has. A pod that selects all of a flavor's labels is on that flavor.
	NodeSelector map[string]string
	// NodeAffinity is the pod's required node affinity (nil for none), and Tolerations
	// its tolerations: with NodeSelector, which flavors' nodes it can reach
	// (flavorIndex.reach). Shared with the informer's copy and other pods: read-only.
	NodeAffinity *corev1.NodeSelector
	Tolerations  []corev1.Toleration
	// Priority is spec.priority (0 when unset).
	Priority int32
	// Created is the creation timestamp; it orders pods of equal priority.
	Created time.Time
	// Usage is PodUsage of the pod, plus what its ResourceClaims charge (WithClaims).
	Usage corev1.ResourceList
	// Claims are the ResourceClaims it uses, each with its share of Usage: a budget
	// charges a claim once, however many of its pods use it (ClaimCharge).
	Claims []ClaimCharge
	// ClaimsError names the claim or template that does not exist yet: a gated pod
	// waits for it, never admitted without its devices counted.
	ClaimsError string
	// Uncountable names a resource of Usage whose value is beyond what the core counts
	// exactly (amount.MaxUnits, Quantity's own documented range), "" when there is
	// none. A gated pod that carries one waits (CodeUncountable) instead of being
	// charged approximately; a pod that runs without passing its queue is charged the
	// bound, which no hard exceeds.
	Uncountable corev1.ResourceName
	// Unset is UnsetResources of the pod: what ResourceQuota would require its
	// containers to set, when a quota tracks it, that they leave unset.
	Unset []UnsetResource
	// Gated is true while the pod carries the scheduling gate quotagate owns (NewPod's
	// gate).
	Gated bool
	// Terminal is true for Succeeded and Failed pods and for pods past their deletion
	// grace period (ResourceQuota stops charging those too).
	Terminal bool
	// ReleaseAt, when set, is when a terminating pod passes its grace period: the core
	// stops charging it then, even if no further update arrives.
	ReleaseAt time.Time
	// Group is the quotagate.io/group label ("" when none).
	Group string
	// GroupSize is the quotagate.io/group-size annotation (0 when unusable).
	GroupSize int
	// GroupError says why GroupSize is unusable. A pod with a group label and an
	// unusable size is held (never admitted alone, which would break the group's
	// all-or-nothing promise) until its annotation is fixed; the controller reports
	// the error in an event.
	GroupError string
	// GroupParts, for a member of a CompositePodGroup's gang (ResolvePodGroup), is the
	// path from just below the gang's root down to the pod's own PodGroup; nil for any
	// other group. A member is admitted with the gang's first admission only when every
	// part on its path is complete.
	GroupParts []GroupPart
	// AdmittedBy is the quotagate.io/admitted-by annotation the manager wrote in the
	// ungate patch (the budgets the pod was charged to, comma-separated), and
	// HasAdmittedBy whether the pod carries it at all: a pod first seen running is
	// pinned to those budgets (AdmittedByKeys), as it was before the manager restarted.
	// Only the manager can write it (the gate guard denies it to everyone else at
	// CREATE and UPDATE).
	AdmittedBy    string
	HasAdmittedBy bool
	// AdmittedLabels is the quotagate.io/admitted-labels annotation the manager wrote
	// in the same patch (the labels it admitted the pod with, as JSON; "" when absent):
	// a pod first seen running is covered by the budgets those labels select, not by
	// what its labels are now (podCharge.labels).
	AdmittedLabels string
	// Start is when the pod may start, from its quotagate.io/not-before and
	// quotagate.io/start-schedule annotations (nil when it has neither): it waits
	// behind the gate, uncharged, until then (placer.startPark). StartError says why
	// those annotations do not parse: the pod then waits until they are fixed.
	Start      *window.Start
	StartError string
	// ActiveDeadline is spec.activeDeadlineSeconds and DeclaredRuntime the
	// quotagate.io/max-runtime annotation (0 for none): how long it may run, for the hour
	// budgets that cover it (hourBooks). RuntimeError says why the annotation does not
	// parse: such a pod waits in a budget with hours until it is fixed. AdmittedAt is its
	// quotagate.io/admitted-at annotation (zero for none): a running pod seen first after
	// a restart counts its hours from then.
	ActiveDeadline, DeclaredRuntime time.Duration
	RuntimeError                    string
	AdmittedAt                      time.Time
	// Dependencies are the objects of its namespace it waits for (the
	// quotagate.io/wait-for annotation; nil when it has none), and whether they still
	// hold it: NewPod holds it until the manager resolves them (ResolveDependencies).
	Dependencies *PodDependencies
	// PodGroup is the Kubernetes PodGroup it names in spec.schedulingGroup (nil for
	// none). Such a pod is grouped by its PodGroup alone (ResolvePodGroup): its
	// quotagate.io/group label is ignored, and NewPod holds it until the manager
	// resolves it (ResolvePodGroup).
	PodGroup *PodGroupRef
}

// NewPod extracts what the core needs from a pod: gate is the scheduling gate quotagate
// owns (the manager's --gate, v1alpha1.SchedulingGate by default), and now decides
// whether a terminating pod is past its grace period.
func NewPod(p *corev1.Pod, gate string, now time.Time) Pod {
	return newPod(p, gate, now, true)
}

// NewPodUnshared is NewPod for a pod that is not in the cluster (a what-if's): its
// labels, node selector, tolerations, usage and unset values are its own, never entered
// in the tables that real pods share (SharedPodUsage). Those keep what they hold for
// the life of the process: a made-up pod's values, as large and as many as a tenant
// likes, would stay there after the answer and take the places of real pods'.
func NewPodUnshared(p *corev1.Pod, gate string, now time.Time) Pod {
	return newPod(p, gate, now, false)
}

func newPod(p *corev1.Pod, gate string, now time.Time, share bool) Pod {
	selector := nodeSelectorOf(&p.Spec)
	out := Pod{
		PodRef:          PodRef{UID: p.UID, Namespace: ShareString(p.Namespace), Name: p.Name},
		ResourceVersion: p.ResourceVersion,
		NodeAffinity:    requiredAffinity(&p.Spec),
		Created:         p.CreationTimestamp.Time,
		Gated:           gates.HasGate(p, gate),
	}
	if share {
		out.Labels = ShareLabels(p.Labels) // a copy of its own: informer objects may change
		out.NodeSelector = ShareLabels(selector)
		out.Tolerations = ShareTolerations(p.Spec.Tolerations)
		out.Usage = SharedPodUsage(p)
		out.Unset = UnsetResources(p)
	} else {
		out.Labels, out.NodeSelector = cloneLabels(p.Labels), cloneLabels(selector)
		out.Tolerations = cloneTolerations(p.Spec.Tolerations)
		out.Usage = PodUsage(p)
		out.Unset = unsetResources(p)
	}
	out.Uncountable, _ = amount.Uncountable(out.Usage)
	if p.Spec.Priority != nil {
		out.Priority = *p.Spec.Priority
	}
	switch {
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		out.Terminal = true
	case p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil:
		release := p.DeletionTimestamp.Add(time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
		if now.After(release) {
			out.Terminal = true
		} else {
			out.ReleaseAt = release
		}
	}
	if by, ok := p.Annotations[v1alpha1.AdmittedByAnnotation]; ok {
		out.AdmittedBy, out.HasAdmittedBy = ShareString(by), true
	}
	// Written by the ungate patch, or for a pod seen running that no manager admitted
	// (TakeRecords), which has no admitted-by.
	out.AdmittedLabels = ShareString(p.Annotations[v1alpha1.AdmittedLabelsAnnotation])
	out.ActiveDeadline, out.DeclaredRuntime, out.RuntimeError = runtimeOf(p)
	if v, ok := p.Annotations[v1alpha1.AdmittedAtAnnotation]; ok {
		out.AdmittedAt, _ = time.Parse(time.RFC3339, v)
	}
	if hasStartAnnotations(p.Annotations) {
		out.Start, out.StartError = parseStart(p.Annotations)
	}
	if v, ok := p.Annotations[v1alpha1.WaitForAnnotation]; ok {
		out.Dependencies = parseDependencies(v)
	}
	if out.PodGroup = podGroupOf(p); out.PodGroup != nil {
		return out // grouped by its PodGroup once resolved, never by the label
	}
	if name := p.Labels[v1alpha1.GroupLabel]; name != "" {
		out.Group = ShareString(name)
		out.GroupSize, out.GroupError = parseGroupSize(p.Annotations)
	}
	return out
}

// requiredAffinity is a copy of the pod's required node affinity, nil when it has none.
func requiredAffinity(spec *corev1.PodSpec) *corev1.NodeSelector {
	a := spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.DeepCopy()
}

// nodeSelectorOf is what a pod spec asks of its node's labels, as a map: its
// nodeSelector, and each label that every term of its required node affinity asks to
// have one value (operator In with a single value). The map is spec.nodeSelector itself
// when there is no such affinity (the caller copies it).
func nodeSelectorOf(spec *corev1.PodSpec) map[string]string {
	a := spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return spec.NodeSelector
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		return spec.NodeSelector
	}
	var common map[string]string
	for i, t := range terms {
		own := map[string]string{}
		for _, r := range t.MatchExpressions {
			if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				own[r.Key] = r.Values[0]
			}
		}
		if i == 0 {
			common = own
			continue
		}
		maps.DeleteFunc(common, func(k, v string) bool { return own[k] != v })
	}
	if len(common) == 0 {
		return spec.NodeSelector
	}
	out := maps.Clone(spec.NodeSelector)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range common {
		if _, set := out[k]; !set {
			out[k] = v
		}
	}
	return out
}

// AdmittedByKeys returns the budgets the admitted-by annotation names, in its order:
// "namespace/name" for a Budget, "name" for a ClusterBudget. Entries the manager never
// writes are dropped: empty or malformed ones, and Budgets of another namespace (a
// Budget covers only pods of its own namespace, so only a forged record could name
// one).
func (p *Pod) AdmittedByKeys() []BudgetKey {
	var out []BudgetKey
	for entry := range strings.SplitSeq(p.AdmittedBy, ",") {
		var key BudgetKey
		switch ns, name, namespaced := strings.Cut(entry, "/"); {
		case !namespaced:
			key = BudgetKey{Name: entry}
		case ns == p.Namespace:
			key = BudgetKey{Namespace: ns, Name: name}
		default:
			continue
		}
		if key.Name == "" || strings.Contains(key.Name, "/") || slices.Contains(out, key) {
			continue
		}
		out = append(out, key)
	}
	return out
}

// AdmittedLabelsText is labels as the admitted-labels annotation holds them: a JSON
// object, keys sorted.
func AdmittedLabelsText(labels map[string]string) string {
	if len(labels) == 0 {
		return "{}"
	}
	b, err := json.Marshal(labels)
	if err != nil { // a map of strings always marshals
		panic(err)
	}
	return string(b)
}

// admittedLabels reads the admitted-labels annotation back; ok is false when the pod
// has none or it does not hold a JSON object of valid labels (only the manager writes
// it, and the gate guard keeps everyone else from it).
func (p *Pod) admittedLabels() (map[string]string, bool) {
	if p.AdmittedLabels == "" {
		return nil, false
	}
	var l map[string]string
	if err := json.Unmarshal([]byte(p.AdmittedLabels), &l); err != nil {
		return nil, false
	}
	for k, v := range l {
		if len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
			return nil, false
		}
	}
	return ShareLabels(l), true
}

func parseGroupSize(annotations map[string]string) (int, string) {
	raw, ok := annotations[v1alpha1.GroupSizeAnnotation]
	if !ok {
		return 0, fmt.Sprintf("annotation %s is missing", v1alpha1.GroupSizeAnnotation)
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		return 0, fmt.Sprintf("annotation %s=%q is not a whole number of at least 1", v1alpha1.GroupSizeAnnotation, raw)
	}
	return n, ""
}

// newerVersion reports whether resourceVersion a is known to be newer than b. Versions
// that are not comparable (empty, or not of the API server's integer form) are never
// known to be newer, so they prove nothing.
func newerVersion(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c > 0
}

// hasStartAnnotations reports whether a pod carries any of the start annotations.
func hasStartAnnotations(a map[string]string) bool {
	for _, k := range []string{v1alpha1.NotBeforeAnnotation, v1alpha1.StartScheduleAnnotation, v1alpha1.StartDurationAnnotation, v1alpha1.StartTimeZoneAnnotation} {
		if _, ok := a[k]; ok {
			return true
		}
	}
	return false
}

// runtimeOf reads how long a pod says it runs: its activeDeadlineSeconds, and its
// quotagate.io/max-runtime annotation, which must be a positive Go duration. An
// admitted pod's admitted-max-runtime (the manager's record of the annotation when it
// was admitted) stands for the annotation: its owner may change that one since.
func runtimeOf(p *corev1.Pod) (deadline, declared time.Duration, problem string) {
	if s := p.Spec.ActiveDeadlineSeconds; s != nil && *s > 0 && *s < math.MaxInt64/int64(time.Second) {
		deadline = time.Duration(*s) * time.Second
	}
	if v, ok := p.Annotations[v1alpha1.AdmittedMaxRuntimeAnnotation]; ok {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return deadline, d, ""
		}
	}
	v, ok := p.Annotations[v1alpha1.MaxRuntimeAnnotation]
	if !ok {
		return deadline, 0, ""
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return deadline, 0, fmt.Sprintf("annotation %s=%q is not a positive duration (say 2h or 90m)", v1alpha1.MaxRuntimeAnnotation, v)
	}
	return deadline, d, ""
}
