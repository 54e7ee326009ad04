package controller_test

import (
	"flag"
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The corpus of the ResourceQuota oracle (oracle_test.go): pods generated from a seed,
// created alike in a namespace with a Budget and in one with a ResourceQuota. Every pod
// sets requests and limits of cpu and memory in every container (or pod-level
// resources), as a ResourceQuota that tracks those names requires; the pods that do
// not are oracleConstraintCases.

var oracleSeed = flag.Uint64("oracle.seed", 29, "seed of the ResourceQuota oracle's corpus (go test -run Oracle -args -oracle.seed=N)")

const (
	// oracleExtended is an extended resource the kwok nodes advertise for the test.
	oracleExtended corev1.ResourceName = "example.com/widget"
	// oracleHugePages is the hugepages size the corpus requests.
	oracleHugePages corev1.ResourceName = "hugepages-2Mi"
	// oracleDeviceClass is the DeviceClass of oracleClaimCases.
	oracleDeviceClass = "qg-oracle-gpu"
	// oracleRuntimeClass is a RuntimeClass with pod overhead; the RuntimeClass
	// admission plugin copies its overhead into the pods that name it.
	oracleRuntimeClass = "qg-oracle-overhead"
	// oracleCorpusSize is how many generated pods each namespace gets.
	oracleCorpusSize = 24
)

// oracleHard is the hard of both the Budget and the ResourceQuota: every name a pod
// consumes, ample so that nothing waits. The bare names (cpu, memory,
// ephemeral-storage, hugepages-2Mi) are tracked beside their requests.* forms.
func oracleHard() corev1.ResourceList {
	hard := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{
		"requests.cpu": "1k", "requests.memory": "1Ti", "requests.ephemeral-storage": "1Ti",
		"limits.cpu": "1k", "limits.memory": "1Ti", "limits.ephemeral-storage": "1Ti",
		"pods": "1k", "count/pods": "1k",
		"requests." + oracleExtended: "1k", "requests." + oracleHugePages: "64Gi", oracleHugePages: "64Gi",
		"cpu": "1k", "memory": "1Ti", "ephemeral-storage": "1Ti",
	} {
		hard[name] = resource.MustParse(v)
	}
	return hard
}

// oracleShape is one kind of pod in the corpus.
type oracleShape struct {
	name string
	spec func(r *rand.Rand) corev1.PodSpec
}

// oracleShapes are the kinds of pods of the corpus; oracleCorpus picks among them.
var oracleShapes = []oracleShape{
	{"burstable", func(r *rand.Rand) corev1.PodSpec {
		return corev1.PodSpec{Containers: oracleContainers(r, "app", 1+r.IntN(3), false, 1)}
	}},
	{"guaranteed", func(r *rand.Rand) corev1.PodSpec {
		return corev1.PodSpec{Containers: oracleContainers(r, "app", 1+r.IntN(2), true, 1)}
	}},
	{"init-containers", func(r *rand.Rand) corev1.PodSpec {
		// An init container often asks more than the app containers together: the
		// larger of the two counts.
		return corev1.PodSpec{
			InitContainers: oracleContainers(r, "init", 1+r.IntN(2), r.IntN(2) == 0, 4),
			Containers:     oracleContainers(r, "app", 1+r.IntN(2), false, 1),
		}
	}},
	{"sidecars", func(r *rand.Rand) corev1.PodSpec {
		// Sidecars add to the app containers and to every init container after them.
		init := []corev1.Container{oracleSidecar(r, "proxy")}
		init = append(init, oracleContainers(r, "init", 1, false, 3)...)
		init = append(init, oracleSidecar(r, "log"))
		return corev1.PodSpec{InitContainers: init, Containers: oracleContainers(r, "app", 1, r.IntN(2) == 0, 1)}
	}},
	{"overhead", func(r *rand.Rand) corev1.PodSpec {
		return corev1.PodSpec{RuntimeClassName: ptr.To(oracleRuntimeClass), Containers: oracleContainers(r, "app", 1+r.IntN(2), r.IntN(2) == 0, 1)}
	}},
	{"pod-level-resources", func(r *rand.Rand) corev1.PodSpec {
		// Pod-level cpu and memory replace the containers'; ephemeral-storage still
		// comes from the containers. ResourceQuota asks nothing of the containers then.
		req := oracleCompute(r, 2)
		c := corev1.Container{Name: "app", Image: "registry.invalid/app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: oracleQuantity(r, 64, 4, "Mi")},
		}}
		return corev1.PodSpec{Containers: []corev1.Container{c}, Resources: &corev1.ResourceRequirements{Requests: req, Limits: oracleAbove(r, req)}}
	}},
	{"pod-level-requests-only", func(r *rand.Rand) corev1.PodSpec {
		// No limit anywhere: ResourceQuota admits it (pod-level resources lift its
		// constraints) and charges limits.* nothing.
		c := corev1.Container{Name: "app", Image: "registry.invalid/app"}
		return corev1.PodSpec{Containers: []corev1.Container{c}, Resources: &corev1.ResourceRequirements{Requests: oracleCompute(r, 2)}}
	}},
	{"extended-resource", func(r *rand.Rand) corev1.PodSpec {
		cs := oracleContainers(r, "app", 1+r.IntN(2), false, 1)
		n := resource.MustParse(fmt.Sprint(1 + r.IntN(3)))
		cs[0].Resources.Requests[oracleExtended], cs[0].Resources.Limits[oracleExtended] = n, n
		return corev1.PodSpec{Containers: cs}
	}},
	{"hugepages", func(r *rand.Rand) corev1.PodSpec {
		cs := oracleContainers(r, "app", 1, true, 1)
		hp := resource.MustParse(fmt.Sprintf("%dMi", 2*(1+r.IntN(8))))
		cs[0].Resources.Requests[oracleHugePages], cs[0].Resources.Limits[oracleHugePages] = hp, hp
		return corev1.PodSpec{Containers: cs}
	}},
	{"everything", func(r *rand.Rand) corev1.PodSpec {
		cs := oracleContainers(r, "app", 2, false, 1)
		one := resource.MustParse("1")
		cs[1].Resources.Requests[oracleExtended], cs[1].Resources.Limits[oracleExtended] = one, one
		hp := resource.MustParse("4Mi")
		cs[0].Resources.Requests[oracleHugePages], cs[0].Resources.Limits[oracleHugePages] = hp, hp
		init := append([]corev1.Container{oracleSidecar(r, "proxy")}, oracleContainers(r, "init", 1, true, 2)...)
		return corev1.PodSpec{RuntimeClassName: ptr.To(oracleRuntimeClass), InitContainers: init, Containers: cs}
	}},
}

// oraclePod is a corpus pod as a user writes it (no gate).
type oraclePod struct {
	name  string
	shape string
	spec  corev1.PodSpec
	// hold adds holdFinalizer, so that the pod stays stored once deleted.
	hold bool
}

// oracleCorpus generates n pods from seed; every shape comes at least once.
func oracleCorpus(seed uint64, n int) []oraclePod {
	r := rand.New(rand.NewPCG(seed, 0x29))
	pods := make([]oraclePod, 0, n)
	for i := range n {
		shape := oracleShapes[i%len(oracleShapes)]
		if i >= len(oracleShapes) {
			shape = oracleShapes[r.IntN(len(oracleShapes))]
		}
		pods = append(pods, oraclePod{name: fmt.Sprintf("c%02d-%s", i, shape.name), shape: shape.name, spec: shape.spec(r)})
	}
	return pods
}

// oracleContainers are n containers named prefix-0, prefix-1, ... with cpu, memory and
// sometimes ephemeral-storage requests; guaranteed sets limits equal to requests, else
// they are higher. The requests are k times a random step.
func oracleContainers(r *rand.Rand, prefix string, n int, guaranteed bool, k int) []corev1.Container {
	out := make([]corev1.Container, 0, n)
	for i := range n {
		req := oracleCompute(r, k)
		if r.IntN(2) == 0 {
			req[corev1.ResourceEphemeralStorage] = oracleQuantity(r, 32*k, 8, "Mi")
		}
		lim := req.DeepCopy()
		if !guaranteed {
			lim = oracleAbove(r, req)
		}
		out = append(out, corev1.Container{
			Name: fmt.Sprintf("%s-%d", prefix, i), Image: "registry.invalid/app",
			Resources: corev1.ResourceRequirements{Requests: req, Limits: lim},
		})
	}
	return out
}

// oracleSidecar is a restartable init container with requests and limits.
func oracleSidecar(r *rand.Rand, name string) corev1.Container {
	c := oracleContainers(r, name, 1, r.IntN(2) == 0, 1)[0]
	c.Name = name
	c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	return c
}

// oracleCompute is a cpu and memory request, k times a random step.
func oracleCompute(r *rand.Rand, k int) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    oracleQuantity(r, 25*k, 8, "m"),
		corev1.ResourceMemory: oracleQuantity(r, 16*k, 8, "Mi"),
	}
}

// oracleQuantity is step times 1 to steps, in unit.
func oracleQuantity(r *rand.Rand, step, steps int, unit string) resource.Quantity {
	return resource.MustParse(fmt.Sprintf("%d%s", step*(1+r.IntN(steps)), unit))
}

// oracleAbove is a limit for each request: the request plus up to twice as much again.
func oracleAbove(r *rand.Rand, req corev1.ResourceList) corev1.ResourceList {
	lim := corev1.ResourceList{}
	for name, q := range req {
		l := q.DeepCopy()
		extra := q.DeepCopy()
		extra.SetMilli(extra.MilliValue() * int64(r.IntN(3)) / 2)
		l.Add(extra)
		lim[name] = l
	}
	return lim
}

// oracleConstraintCases are pods that a ResourceQuota tracking cpu and memory refuses
// at create (podEvaluator.Constraints): they leave a tracked resource unset.
var oracleConstraintCases = []struct {
	name string
	spec corev1.PodSpec
	// refusal is ResourceQuota's message, after "forbidden: failed quota: ...: ".
	refusal string
}{
	{
		name:    "best-effort",
		spec:    corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app"}}},
		refusal: "must specify cpu for: app; limits.cpu for: app; limits.memory for: app; memory for: app; requests.cpu for: app; requests.memory for: app",
	},
	{
		name: "requests-without-limits",
		spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		}}}},
		refusal: "must specify limits.cpu for: app; limits.memory for: app",
	},
	{
		name: "init-container-without-resources",
		spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "registry.invalid/app"}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			}}},
		},
		refusal: "must specify cpu for: init; limits.cpu for: init; limits.memory for: init; memory for: init; requests.cpu for: init; requests.memory for: init",
	},
}

// oracleClaimCase is a DRA case of the corpus: claims or templates made alike in both
// namespaces, and pods that use them. The ResourceQuota charges the claims
// (<class>.deviceclass.resource.k8s.io/devices, requests.<extended> for a DeviceClass
// with an extended resource name); the Budget must charge the pods the same.
type oracleClaimCase struct {
	name string
	// hard are the names this case adds to both the Budget and the ResourceQuota.
	hard corev1.ResourceList
	// clusterObjects (DeviceClasses, ResourceSlices) are created once, before the
	// namespaced objects, and deleted when the test ends.
	clusterObjects func() []client.Object
	// objects (ResourceClaims, ResourceClaimTemplates) are created in each namespace
	// before its pods.
	objects func(ns string) []client.Object
	// pods are the case's pods, without the gate (the test adds it in the Budget's
	// namespace); their names must be unique in the corpus.
	pods func() []oraclePod
}

// oracleClaimCases are the DRA rows of the corpus: a claim shared by two pods (charged
// once), a claim from a template, and a claim with allocationMode All, all of one
// DeviceClass with an extended resource name. No driver allocates them, so their pods
// stay Pending in both namespaces, charged all the same: the ResourceQuota charges the
// claims when they are made, the Budget when it removes the pods' gates.
var oracleClaimCases = []oracleClaimCase{{
	name: "devices",
	hard: corev1.ResourceList{
		oracleDeviceClass + ".deviceclass.resource.k8s.io/devices":         resource.MustParse("100"),
		"requests.deviceclass.resource.kubernetes.io/" + oracleDeviceClass: resource.MustParse("100"),
		"requests.example.com/" + oracleDeviceClass:                        resource.MustParse("100"),
	},
	clusterObjects: func() []client.Object {
		return []client.Object{&resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: oracleDeviceClass},
			Spec:       resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To("example.com/" + oracleDeviceClass)},
		}}
	},
	objects: func(ns string) []client.Object {
		all := devicesSpec(oracleDeviceClass, 0)
		all.Devices.Requests[0].Exactly.AllocationMode = resourceapi.DeviceAllocationModeAll
		return []client.Object{
			&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: ns}, Spec: *devicesSpec(oracleDeviceClass, 4)},
			&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: ns}, Spec: *all},
			&resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "two", Namespace: ns},
				Spec: resourceapi.ResourceClaimTemplateSpec{Spec: *devicesSpec(oracleDeviceClass, 2)}},
		}
	},
	pods: func() []oraclePod {
		r := rand.New(rand.NewPCG(*oracleSeed, 0xd4a))
		withClaim := func(name string, claim corev1.PodResourceClaim) oraclePod {
			spec := oracleShapes[0].spec(r)
			spec.ResourceClaims = []corev1.PodResourceClaim{claim}
			spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: claim.Name}}
			return oraclePod{name: name, shape: "devices", spec: spec}
		}
		return []oraclePod{
			withClaim("d-shared-0", corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To("shared")}),
			withClaim("d-shared-1", corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To("shared")}),
			withClaim("d-all", corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To("all")}),
			withClaim("d-template", corev1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To("two")}),
		}
	},
}}
