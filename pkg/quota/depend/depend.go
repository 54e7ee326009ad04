// Package depend reads what a pod waits for before it may start (the
// quotagate.io/wait-for annotation, docs/start-control.md "Dependencies"), says of each
// object whether it is ready, and finds cycles between the workloads that wait for each
// other. It reads API objects and nothing else: the manager watches them and gives the
// admission core each pod's verdict.
package depend

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Kind is a kind of object a pod may wait for.
type Kind string

// The kinds a pod may wait for, and what each must be.
const (
	// Job: complete (condition Complete true). A failed Job never will be.
	Job Kind = "Job"
	// PersistentVolumeClaim: Bound. A Lost claim never will be again.
	PersistentVolumeClaim Kind = "PersistentVolumeClaim"
	// Deployment: Available (condition Available true). One whose progress deadline
	// passed (Progressing false, ProgressDeadlineExceeded) is said to have failed.
	Deployment Kind = "Deployment"
	// Secret and ConfigMap: exist.
	Secret    Kind = "Secret"
	ConfigMap Kind = "ConfigMap"
)

// kinds maps what the annotation may say to a Kind.
var kinds = map[string]Kind{
	"job": Job, "jobs": Job,
	"persistentvolumeclaim": PersistentVolumeClaim, "persistentvolumeclaims": PersistentVolumeClaim, "pvc": PersistentVolumeClaim,
	"deployment": Deployment, "deployments": Deployment, "deploy": Deployment,
	"secret": Secret, "secrets": Secret,
	"configmap": ConfigMap, "configmaps": ConfigMap, "cm": ConfigMap,
}

// MaxDependencies is how many objects one pod may wait for.
const MaxDependencies = 32

// Dependency names an object of the pod's own namespace that it waits for.
type Dependency struct {
	Kind Kind
	Name string
}

// String is "Job prepare".
func (d Dependency) String() string { return string(d.Kind) + " " + d.Name }

// Parse reads a quotagate.io/wait-for value: a comma-separated list of kind/name, such
// as "job/prepare, pvc/scratch". Names are of the pod's own namespace: a value that
// names another (a third segment) is refused, as is an unknown kind, a name that is
// not a valid object name, or more than MaxDependencies objects. The result is sorted
// and without repeats.
func Parse(value string) ([]Dependency, error) {
	var out []Dependency
	for item := range strings.SplitSeq(value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		parts := strings.Split(item, "/")
		if len(parts) != 2 {
			return nil, fmt.Errorf("%q is not kind/name: a pod waits only for objects of its own namespace", item)
		}
		kind, ok := kinds[strings.ToLower(parts[0])]
		if !ok {
			return nil, fmt.Errorf("%q: kind %q is not one of job, persistentvolumeclaim (pvc), deployment, secret, configmap", item, parts[0])
		}
		if errs := validation.IsDNS1123Subdomain(parts[1]); len(errs) > 0 {
			return nil, fmt.Errorf("%q: %q is not an object name: %s", item, parts[1], errs[0])
		}
		out = append(out, Dependency{Kind: kind, Name: parts[1]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q names no object (kind/name, comma-separated)", value)
	}
	slices.SortFunc(out, func(a, b Dependency) int { return strings.Compare(a.String(), b.String()) })
	out = slices.Compact(out)
	if len(out) > MaxDependencies {
		return nil, fmt.Errorf("names %d objects, more than the %d a pod may wait for", len(out), MaxDependencies)
	}
	return out, nil
}

// State is how far an object is from what a pod waits for.
type State int

const (
	// Pending: not ready yet; it may become ready.
	Pending State = iota
	// Ready: what the pod waits for.
	Ready
	// Failed: it never will be ready, as it is.
	Failed
)

// Status is an object's State, and a sentence saying so.
type Status struct {
	State   State
	Message string
}

// Missing is the Status of an object that does not exist (yet).
func Missing(d Dependency) Status {
	return Status{Message: fmt.Sprintf("waiting for %s, which does not exist yet", d)}
}

// JobStatus says whether a Job completed.
func JobStatus(j *batchv1.Job) Status {
	d := Dependency{Kind: Job, Name: j.Name}
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return Status{State: Ready}
		case batchv1.JobFailed:
			return Status{State: Failed, Message: fmt.Sprintf("%s failed (%s): it will never complete", d, orUnknown(c.Reason))}
		}
	}
	return Status{Message: fmt.Sprintf("waiting for %s to complete", d)}
}

// PVCStatus says whether a PersistentVolumeClaim is Bound.
func PVCStatus(c *corev1.PersistentVolumeClaim) Status {
	d := Dependency{Kind: PersistentVolumeClaim, Name: c.Name}
	switch c.Status.Phase {
	case corev1.ClaimBound:
		return Status{State: Ready}
	case corev1.ClaimLost:
		return Status{State: Failed, Message: fmt.Sprintf("%s lost its volume: it will not be Bound again", d)}
	}
	return Status{Message: fmt.Sprintf("waiting for %s to be Bound (it is %s)", d, orUnknown(string(c.Status.Phase)))}
}

// DeploymentStatus says whether a Deployment is Available.
func DeploymentStatus(dep *appsv1.Deployment) Status {
	d := Dependency{Kind: Deployment, Name: dep.Name}
	available := false
	for _, c := range dep.Status.Conditions {
		switch {
		case c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue:
			available = true
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded":
			return Status{State: Failed, Message: fmt.Sprintf("%s exceeded its progress deadline: it is not becoming Available", d)}
		}
	}
	if available {
		return Status{State: Ready}
	}
	return Status{Message: fmt.Sprintf("waiting for %s to be Available", d)}
}

// Exists is the Status of a Secret or ConfigMap that exists.
func Exists() Status { return Status{State: Ready} }

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
