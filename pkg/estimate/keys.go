package estimate

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/pkg/quota"
)

// Level says how specific a Key is: durations are looked up from the most specific
// level down.
type Level int

const (
	// LevelOwner: pods of one owner kind and owner name (its generated suffix
	// removed) in one namespace: the pods of one Job, of one Deployment's ReplicaSets,
	// of one CronJob's Jobs.
	LevelOwner Level = iota
	// LevelNamespace: every pod of one namespace.
	LevelNamespace
	// LevelBudget: every pod one budget was charged for (a ClusterBudget's span several
	// namespaces: only durations are kept, never names).
	LevelBudget
)

// Key is what finished pods that look alike share.
type Key struct {
	Level     Level
	Namespace string // LevelOwner, LevelNamespace
	OwnerKind string // LevelOwner
	Owner     string // LevelOwner: the owner's name without its generated suffix
	Budget    quota.BudgetKey
}

// String names the key as an estimate's basis shows it: "Job team-a/train",
// "namespace team-a", "Budget team-a/gpu".
func (k Key) String() string {
	switch k.Level {
	case LevelOwner:
		return k.OwnerKind + " " + k.Namespace + "/" + k.Owner
	case LevelNamespace:
		return "namespace " + k.Namespace
	default:
		return k.Budget.Describe()
	}
}

// KeysOf returns the keys of a pod, most specific first: its owner's, its namespace's,
// then one per budget in budgets (the budgets it is, or was, charged to, in the core's
// order).
func KeysOf(pod *corev1.Pod, budgets []quota.BudgetKey) []Key {
	kind, owner := ownerOf(pod)
	return keysOf(pod.Namespace, kind, owner, budgets)
}

// Keys is KeysOf for the pod these are the facts of.
func (f *Facts) Keys(budgets []quota.BudgetKey) []Key {
	return keysOf(f.Namespace, f.OwnerKind, f.Owner, budgets)
}

func keysOf(namespace, kind, owner string, budgets []quota.BudgetKey) []Key {
	keys := make([]Key, 0, 2+len(budgets))
	keys = append(keys,
		Key{Level: LevelOwner, Namespace: namespace, OwnerKind: kind, Owner: owner},
		Key{Level: LevelNamespace, Namespace: namespace})
	for _, b := range budgets {
		keys = append(keys, Key{Level: LevelBudget, Budget: b})
	}
	return keys
}

// podTemplateHashLabel is the label a Deployment puts on its ReplicaSets' pods; the
// ReplicaSet's name is the Deployment's name, "-", and this hash
// (appsv1.DefaultDeploymentUniqueLabelKey).
const podTemplateHashLabel = "pod-template-hash"

// ownerOf returns the kind and the workload's name (stem) of what made the pod: its
// controller (or first owner); a bare pod is its own owner, named by its generateName
// or its name.
//
// The name is the workload's, not the object's: what Kubernetes generated and what
// numbers the runs of one workload are cut off (stem), so that Jobs train-7 and
// train-8, a CronJob's Jobs, a Deployment's ReplicaSets or the bare pods etl-1, etl-2
// share one key:
//   - a ReplicaSet of a Deployment: "<deployment>-<pod-template-hash>", the hash being
//     the pod's pod-template-hash label;
//   - then stem: trailing "-<digits>" (a run's number, a CronJob's scheduled minute)
//     and "-<5 characters of apimachinery's SimpleNameGenerator>" (generateName),
//     as many as there are.
//
// A StatefulSet's, a DaemonSet's or a Job's pods share their owner: their own suffixes
// are on the pods, not on the owner.
func ownerOf(pod *corev1.Pod) (kind, name string) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil && len(pod.OwnerReferences) > 0 {
		ref = &pod.OwnerReferences[0]
	}
	if ref == nil {
		if pod.GenerateName != "" {
			return "Pod", stem(strings.TrimRight(pod.GenerateName, "-"))
		}
		return "Pod", stem(pod.Name)
	}
	name = ref.Name
	if ref.Kind == "ReplicaSet" {
		if h := pod.Labels[podTemplateHashLabel]; h != "" {
			if base, ok := strings.CutSuffix(name, "-"+h); ok && base != "" {
				name = base
			}
		}
	}
	return ref.Kind, stem(name)
}

// stem is name without its trailing numbered or generated segments ("-7", "-29312640",
// "-x7k2p"), as many as there are; a name that is nothing but such segments is kept
// as it is.
func stem(name string) string {
	for {
		i := strings.LastIndexByte(name, '-')
		if i < 1 {
			return name
		}
		if seg := name[i+1:]; !numbered(seg) && !generated(seg) {
			return name
		}
		name = name[:i]
	}
}

// numbered reports whether seg is a number: a run's, an index, a scheduled time.
func numbered(seg string) bool {
	if seg == "" {
		return false
	}
	for _, c := range seg {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// generatedAlphabet is what apimachinery's SimpleNameGenerator draws from
// (k8s.io/apimachinery/pkg/util/rand: alphanums), and generatedLength how many.
const (
	generatedAlphabet = "bcdfghjklmnpqrstvwxz2456789"
	generatedLength   = 5
)

// generated reports whether seg is a generateName suffix: 5 characters of the
// alphabet, which has no vowels, so that a word a user wrote is rarely taken for one.
func generated(seg string) bool {
	if len(seg) != generatedLength {
		return false
	}
	for _, c := range seg {
		if !strings.ContainsRune(generatedAlphabet, c) {
			return false
		}
	}
	return true
}
