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

// ownerOf returns the kind and the name, without what Kubernetes generated, of what
// made the pod: its controller (or first owner); a bare pod is its own owner.
//
// Generated names (how k8s names generated objects):
//   - a ReplicaSet of a Deployment: "<deployment>-<pod-template-hash>", the hash being
//     the pod's pod-template-hash label;
//   - a Job of a CronJob: "<cronjob>-<scheduled time in minutes since the epoch>" (8
//     digits and more since 1973);
//   - anything created with generateName (a Job made by a workflow engine, a bare
//     pod): the prefix and 5 characters of apimachinery's SimpleNameGenerator, drawn
//     from an alphabet without vowels ("bcdfghjklmnpqrstvwxz2456789"), so that a word
//     a user wrote is rarely taken for one.
//
// A StatefulSet's, a DaemonSet's or a Job's own name is kept as it is: their pods'
// suffixes are on the pods, not on the owner.
func ownerOf(pod *corev1.Pod) (kind, name string) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil && len(pod.OwnerReferences) > 0 {
		ref = &pod.OwnerReferences[0]
	}
	if ref == nil {
		if pod.GenerateName != "" {
			return "Pod", strings.TrimSuffix(pod.GenerateName, "-")
		}
		return "Pod", trimGenerated(pod.Name)
	}
	name = ref.Name
	switch ref.Kind {
	case "ReplicaSet":
		if h := pod.Labels[podTemplateHashLabel]; h != "" {
			if base, ok := strings.CutSuffix(name, "-"+h); ok && base != "" {
				return ref.Kind, base
			}
		}
	case "Job":
		if base, ok := trimDigits(name); ok {
			return ref.Kind, base
		}
	}
	return ref.Kind, trimGenerated(name)
}

// generatedAlphabet is what apimachinery's SimpleNameGenerator draws from
// (k8s.io/apimachinery/pkg/util/rand: alphanums), and generatedLength how many.
const (
	generatedAlphabet = "bcdfghjklmnpqrstvwxz2456789"
	generatedLength   = 5
)

// trimGenerated removes a generateName suffix ("-" and 5 characters of the alphabet).
func trimGenerated(name string) string {
	i := len(name) - generatedLength - 1
	if i < 1 || name[i] != '-' {
		return name
	}
	for _, c := range name[i+1:] {
		if !strings.ContainsRune(generatedAlphabet, c) {
			return name
		}
	}
	return name[:i]
}

// trimDigits removes a CronJob's suffix: "-" and at least 8 digits.
func trimDigits(name string) (string, bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 1 || len(name)-i-1 < 8 {
		return name, false
	}
	for _, c := range name[i+1:] {
		if c < '0' || c > '9' {
			return name, false
		}
	}
	return name[:i], true
}
