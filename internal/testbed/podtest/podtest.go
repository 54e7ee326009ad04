// Package podtest is the one pod builder of quotagate's tests, after kube-scheduler's
// st.MakePod(): New starts a pod, each method sets one thing and returns the builder, and
// Obj returns the pod.
//
// It is a package of its own, apart from internal/testbed, so that the core's in-package
// tests (pkg/quota, pkg/gates) can use it without linking a control plane: it imports
// only the Kubernetes API types, quotagate's API and go-cmp (ListDiff).
package podtest

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// Image is the image of the pod's container unless Container names another: one the
// API server accepts and kwok need not pull.
const Image = "registry.k8s.io/pause:3.10"

// Builder builds one pod. Its methods change the pod in place and return the builder.
type Builder struct {
	pod *corev1.Pod
	// base is the time Created counts from, set by At.
	base time.Time
}

// New starts a pod named name with one container "c" running Image, no namespace, no
// gate and no requests.
func New(name string) *Builder {
	return &Builder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: Image}}},
	}}
}

// Obj returns the pod; later calls on the builder change it.
func (b *Builder) Obj() *corev1.Pod { return b.pod }

// NS puts the pod in namespace ns.
func (b *Builder) NS(ns string) *Builder { b.pod.Namespace = ns; return b }

// GenerateName sets the prefix the API server names the pod from, and clears the name.
func (b *Builder) GenerateName(prefix string) *Builder {
	b.pod.Name, b.pod.GenerateName = "", prefix
	return b
}

// UID sets the pod's UID, which the core keys pods by.
func (b *Builder) UID(uid string) *Builder { b.pod.UID = types.UID(uid); return b }

// TypeMeta sets apiVersion v1 and kind Pod, as a pod in an admission review has them.
func (b *Builder) TypeMeta() *Builder {
	b.pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	return b
}

// RV sets the resourceVersion the pod is read at.
func (b *Builder) RV(rv int) *Builder { b.pod.ResourceVersion = strconv.Itoa(rv); return b }

// At sets the pod's creation time to t and makes t the time Created counts from.
func (b *Builder) At(t time.Time) *Builder {
	b.base = t
	b.pod.CreationTimestamp = metav1.NewTime(t)
	return b
}

// Created sets the creation time to s seconds after the time At set.
func (b *Builder) Created(s int) *Builder {
	b.pod.CreationTimestamp = metav1.NewTime(b.base.Add(time.Duration(s) * time.Second))
	return b
}

// Label sets label k to v.
func (b *Builder) Label(k, v string) *Builder {
	metav1.SetMetaDataLabel(&b.pod.ObjectMeta, k, v)
	return b
}

// Annotation sets annotation k to v.
func (b *Builder) Annotation(k, v string) *Builder {
	metav1.SetMetaDataAnnotation(&b.pod.ObjectMeta, k, v)
	return b
}

// Finalizers adds finalizers.
func (b *Builder) Finalizers(names ...string) *Builder {
	b.pod.Finalizers = append(b.pod.Finalizers, names...)
	return b
}

// Owner adds an ownerReference to the object kind named name, whose UID is "uid-" and
// its name; controller says whether the owner is the pod's controller.
func (b *Builder) Owner(apiVersion, kind, name string, controller bool) *Builder {
	b.pod.OwnerReferences = append(b.pod.OwnerReferences, metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + name),
		Controller: &controller,
	})
	return b
}

// Group puts the pod in group name of size n: the group label and size annotation.
func (b *Builder) Group(name string, n int) *Builder {
	return b.Label(v1alpha1.GroupLabel, name).Annotation(v1alpha1.GroupSizeAnnotation, fmt.Sprint(n))
}

// AdmittedBy sets the admitted-by annotation the manager's ungate patch writes.
func (b *Builder) AdmittedBy(value string) *Builder {
	return b.Annotation(v1alpha1.AdmittedByAnnotation, value)
}

// Gated adds quotagate's scheduling gate, as the webhook does.
func (b *Builder) Gated() *Builder { return b.Gates(v1alpha1.SchedulingGate) }

// Gates adds scheduling gates named names, in order.
func (b *Builder) Gates(names ...string) *Builder {
	for _, n := range names {
		b.pod.Spec.SchedulingGates = append(b.pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: n})
	}
	return b
}

// Ungated drops every scheduling gate: the pod ran before quotagate, or was admitted.
func (b *Builder) Ungated() *Builder { b.pod.Spec.SchedulingGates = nil; return b }

// Spec replaces the pod's spec with spec; the methods after it change spec.
func (b *Builder) Spec(spec corev1.PodSpec) *Builder { b.pod.Spec = spec; return b }

// Container names the pod's container and its image ("" for none).
func (b *Builder) Container(name, image string) *Builder {
	b.pod.Spec.Containers[0].Name, b.pod.Spec.Containers[0].Image = name, image
	return b
}

// Req sets container requests, "cpu=2,memory=1Gi", keeping the others.
func (b *Builder) Req(spec string) *Builder {
	setList(&b.pod.Spec.Containers[0].Resources.Requests, spec)
	return b
}

// Lim sets container limits, "cpu=2,memory=1Gi", keeping the others.
func (b *Builder) Lim(spec string) *Builder {
	setList(&b.pod.Spec.Containers[0].Resources.Limits, spec)
	return b
}

// Priority sets the pod's priority, as the priority admission plugin resolves it.
func (b *Builder) Priority(p int32) *Builder { b.pod.Spec.Priority = &p; return b }

// NodeName binds the pod to node n.
// PodGroup names the Kubernetes PodGroup the pod belongs to (spec.schedulingGroup).
func (b *Builder) PodGroup(name string) *Builder {
	b.pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
	return b
}

func (b *Builder) NodeName(n string) *Builder { b.pod.Spec.NodeName = n; return b }

// GracePeriod sets terminationGracePeriodSeconds.
func (b *Builder) GracePeriod(s int64) *Builder {
	b.pod.Spec.TerminationGracePeriodSeconds = &s
	return b
}

// RestartPolicy sets the pod's restart policy.
func (b *Builder) RestartPolicy(p corev1.RestartPolicy) *Builder {
	b.pod.Spec.RestartPolicy = p
	return b
}

// Toleration adds a toleration.
func (b *Builder) Toleration(t corev1.Toleration) *Builder {
	b.pod.Spec.Tolerations = append(b.pod.Spec.Tolerations, t)
	return b
}

// Phase sets the pod's status phase.
func (b *Builder) Phase(p corev1.PodPhase) *Builder { b.pod.Status.Phase = p; return b }

// Condition adds a status condition of type c, true, last changed at at.
func (b *Builder) Condition(c corev1.PodConditionType, at time.Time) *Builder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{
		Type: c, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at),
	})
	return b
}

// ListDiff compares resource lists by value ("1000m" equals "1"), as cmp.Diff reports.
func ListDiff(want, got corev1.ResourceList) string {
	return cmp.Diff(want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }))
}

// ParseList parses "cpu=2,memory=1Gi" into a ResourceList; "" is an empty list. It
// panics on a quantity that does not parse, as resource.MustParse does.
func ParseList(spec string) corev1.ResourceList {
	out := corev1.ResourceList{}
	if spec == "" {
		return out
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

// setList sets the quantities of spec in *list, making it first when it is nil.
func setList(list *corev1.ResourceList, spec string) {
	if *list == nil {
		*list = corev1.ResourceList{}
	}
	for name, q := range ParseList(spec) {
		(*list)[name] = q
	}
}
