package admission

import (
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// The identities that legitimately create the pod shapes PodGater skips. The
// same names are written in the webhook's matchConditions (config/webhook and
// the chart), so that the API server does not call the webhook for them.
const (
	// NodesGroup and NodeUserPrefix make a node's (a kubelet's) identity, as
	// the API server's Node authorizer reads it: user system:node:<name> in
	// group system:nodes. Nodes create mirror pods, bound to themselves.
	NodesGroup     = "system:nodes"
	NodeUserPrefix = "system:node:"

	// DaemonSetControllerUser is the DaemonSet controller's identity when
	// kube-controller-manager runs with --use-service-account-credentials
	// (kubeadm's default, and the local control plane's).
	DaemonSetControllerUser = "system:serviceaccount:kube-system:daemon-set-controller"
	// ControllerManagerUser is kube-controller-manager's own identity, which
	// every controller uses when it runs without per-controller credentials.
	// Like the ServiceAccount above, no tenant can hold it: it is a client
	// certificate from the cluster's CA.
	ControllerManagerUser = "system:kube-controller-manager"
)

// daemonSetControllerUsers are the users whose pods of an exempt DaemonSet are
// not gated.
var daemonSetControllerUsers = []string{DaemonSetControllerUser, ControllerManagerUser}

// isNode reports whether user is a node, by the Node authorizer's rule.
func isNode(user authenticationv1.UserInfo) bool {
	return strings.HasPrefix(user.Username, NodeUserPrefix) && slices.Contains(user.Groups, NodesGroup)
}

// isDaemonSetController reports whether user is the DaemonSet controller.
func isDaemonSetController(user authenticationv1.UserInfo) bool {
	return slices.Contains(daemonSetControllerUsers, user.Username)
}

// boundPodRefusal is the denial for a pod with spec.nodeName created by
// username, who is not a node, in namespace: it names the rule and says what
// to do instead.
func boundPodRefusal(pod *corev1.Pod, namespace, username, gate string) string {
	return fmt.Sprintf("spec.nodeName (%s) may only be set on a new pod by a node (user %s<name> in group %s), not by %s: "+
		"in namespace %s, labelled %s=true, pods wait for their budget behind the scheduling gate %s, "+
		"which cannot be combined with spec.nodeName; leave spec.nodeName empty and choose the node "+
		"with a nodeSelector on kubernetes.io/hostname",
		pod.Spec.NodeName, NodeUserPrefix, NodesGroup, username, namespace, v1alpha1.EnabledLabel, gate)
}
