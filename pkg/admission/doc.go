// Package admission holds quotagate's mutating webhook: PodGater, a raw
// controller-runtime admission.Handler that answers each pod CREATE with the
// explicit JSON patch ops that add the quotagate scheduling gate (never a diff
// of a re-marshalled pod), and the Prometheus metrics it keeps.
//
// The handler is stateless and never calls the API server: which namespaces
// are gated is decided by the webhook configuration's namespaceSelector, and
// which pods are skipped (bound, mirror and DaemonSet pods, pods already
// gated) is decided from the pod in the request alone. The same skips are
// written as CEL matchConditions in config/webhook, so the API server does not
// call the webhook for those pods at all; the handler checks them again for
// installs without matchConditions.
//
// Removing the gate is guarded in the API server, not here: see
// config/policy for the ValidatingAdmissionPolicy that only lets the manager
// do it.
package admission
