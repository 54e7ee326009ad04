package admission

import (
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DaemonSetRef names a DaemonSet whose pods an administrator exempts from the
// gate. DaemonSet pods are gated like any other: the built-in edit role may
// create DaemonSets, so a rule that skipped them would let a tenant run one
// pod per node outside its budget. Node agents belong in namespaces that do
// not opt in; where one must run in an opted-in namespace, the administrator
// names its DaemonSet in the webhook's --exempt-daemonsets flag and in the
// matchConditions (the chart's admission.exemptDaemonSets writes both). Only
// who may change the webhook configuration or the policy, not who may create
// a DaemonSet, can exempt one.
type DaemonSetRef struct {
	Namespace, Name string
}

// String is the form ParseDaemonSetRef reads: namespace/name.
func (r DaemonSetRef) String() string { return r.Namespace + "/" + r.Name }

// ParseDaemonSetRef reads namespace/name, as the flag and the chart value
// write it, and says what is wrong with anything else.
func ParseDaemonSetRef(s string) (DaemonSetRef, error) {
	namespace, name, ok := strings.Cut(s, "/")
	if !ok {
		return DaemonSetRef{}, fmt.Errorf("exempt DaemonSet %q: want namespace/name", s)
	}
	var problems []string
	for _, msg := range validation.IsDNS1123Label(namespace) {
		problems = append(problems, "namespace: "+msg)
	}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		problems = append(problems, "name: "+msg)
	}
	if len(problems) > 0 {
		return DaemonSetRef{}, fmt.Errorf("exempt DaemonSet %q: %s", s, strings.Join(problems, "; "))
	}
	return DaemonSetRef{Namespace: namespace, Name: name}, nil
}

// isExemptDaemonSetPod reports whether pod, created by user in namespace, is a
// pod of one of the exempt DaemonSets made by the DaemonSet controller: its
// controller ownerReference is an apps DaemonSet named in exempt, and the
// request comes from the DaemonSet controller's identity, which no tenant
// holds (an ownerReference anyone can write).
func isExemptDaemonSetPod(pod *corev1.Pod, namespace string, user authenticationv1.UserInfo, exempt []DaemonSetRef) bool {
	if len(exempt) == 0 || !isDaemonSetController(user) {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "DaemonSet" || !strings.HasPrefix(ref.APIVersion, "apps/") {
		return false
	}
	return slices.Contains(exempt, DaemonSetRef{Namespace: namespace, Name: ref.Name})
}
