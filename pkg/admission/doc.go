// Package admission holds quotagate's mutating webhook: PodGater, a raw
// controller-runtime admission.Handler that answers each pod CREATE with the
// explicit JSON patch ops that add the quotagate scheduling gate (never a diff
// of a re-marshalled pod), and the Prometheus metrics it keeps.
//
// The handler is stateless and never calls the API server: which namespaces
// are gated is decided by the webhook configuration's namespaceSelector, and
// which pods are skipped from the pod in the request and the identity that
// sends it. Mirror pods and pods with spec.nodeName are skipped only when a
// node creates them, and the pods of the DaemonSets an administrator exempts
// (none by default) only when the DaemonSet controller does; every other pod,
// other DaemonSets' pods included, gets the gate, and a pod with spec.nodeName
// (which cannot carry a gate) is refused. The same skips are written as CEL matchConditions in
// config/webhook, so the API server does not call the webhook for those pods
// at all; the handler checks them again for installs without matchConditions.
// docs/admission.md states the rule for users.
//
// Removing the gate, raising an admitted pod's resources with pods/resize, and
// changing an admitted pod's tolerations before it is bound are guarded in the
// API server, not here: see config/policy for the ValidatingAdmissionPolicies.
package admission
