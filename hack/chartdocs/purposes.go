package main

// purposes says what each object of the chart is for, in a line, by kind and name in
// release quotagate. The inventory fails when the chart renders an object this does not
// name, or this names one that no rendering has. A role's rules are added from the
// rendered role.
var purposes = map[string]string{
	"CustomResourceDefinition budgets.quotagate.io":              "The Budget kind. Templates, so upgrades update them; kept on uninstall unless `crds.keep=false`.",
	"CustomResourceDefinition clusterbudgets.quotagate.io":       "The ClusterBudget kind, as above.",
	"CustomResourceDefinition flavors.quotagate.io":              "The Flavor kind (a kind of node that budgets hold quota for), as above.",
	"CustomResourceDefinition budgetwindows.quotagate.io":        "The BudgetWindow kind (a Budget changed for a time), as above.",
	"CustomResourceDefinition clusterbudgetwindows.quotagate.io": "The ClusterBudgetWindow kind (a ClusterBudget changed for a time), as above.",

	"ServiceAccount quotagate-manager":                       "The manager's identity: the only one the gate guard lets remove the gate (with `guard.extraAllowedUsers`).",
	"Deployment quotagate-manager":                           "The manager: accounting, admission queues, the patches that remove the gate, the visibility API; one leader, standbys with `manager.replicas`.",
	"Service quotagate-manager-metrics":                      "The manager's `/metrics` and `/debug/queues` (HTTPS with `manager.metricsSecure`).",
	"PodDisruptionBudget quotagate-manager":                  "Keeps a manager through voluntary evictions, with `manager.replicas` above 1.",
	"ClusterRole quotagate-manager":                          "The manager's cluster-wide rights, generated from its RBAC markers: it patches pods to remove the gate and their status with why a gated pod waits, evicts and deletes pods to preempt, reads budgets, their windows, flavors, DRA objects and PriorityClasses (a simulated pod's priority), writes the windows' status, pins the ResourceClaims of admitted pods with a finalizer, and may forward podsimulations from a standby to the leader.",
	"ClusterRoleBinding quotagate-manager":                   "Binds it to the manager's ServiceAccount.",
	"Role quotagate-manager-leader-election":                 "The manager's leader election Lease in the release namespace.",
	"RoleBinding quotagate-manager-leader-election":          "Binds it to the manager's ServiceAccount.",
	"ClusterRole quotagate-budget-viewer":                    "Reading Budgets and BudgetWindows; aggregated to `view`, `edit` and `admin` unless `rbac.aggregateToDefaultRoles=false` (docs/rbac.md).",
	"ClusterRole quotagate-clusterbudget-viewer":             "Reading ClusterBudgets and ClusterBudgetWindows, for you to bind.",
	"ClusterRole quotagate-flavor-viewer":                    "Reading Flavors, for you to bind.",
	"ClusterRole quotagate-budget-admin":                     "Writing budgets, their windows and flavors, for platform admins.",
	"ClusterRole quotagate-queue-viewer":                     "Reading a namespace's queues through the visibility API; aggregated like the budget viewer.",
	"ClusterRole quotagate-clusterqueue-viewer":              "Reading ClusterBudgets' queues through the visibility API, for you to bind.",
	"ClusterRole quotagate-pod-simulator":                    "Creating podsimulations (`kubectl quotagate simulate`); aggregated to `edit` and `admin`, answered only to who may create pods.",
	"ClusterRole quotagate-debug-queues-reader":              "GET `/debug/queues` on the manager's metrics port, for you to bind.",
	"ClusterRole quotagate-metrics-reader":                   "GET `/metrics` on the manager's HTTPS port.",
	"ClusterRoleBinding quotagate-metrics-reader-prometheus": "Binds the metrics reader to Prometheus's ServiceAccount (`metrics.prometheus.serviceAccount`).",
	"Service quotagate-visibility":                           "The manager's visibility API port, behind the APIService.",
	"APIService v1alpha1.visibility.quotagate.io":            "Serves visibility.quotagate.io (each tenant's queue) through kube-apiserver (docs/visibility.md).",
	"ClusterRoleBinding quotagate-visibility-auth-delegator": "Lets the manager check the callers of the visibility API (system:auth-delegator).",
	"ClusterRoleBinding quotagate-visibility-manager":        "Binds the clusterqueue viewer to the manager: a standby asks the leader for queues as itself.",
	"RoleBinding quotagate-visibility-auth-reader":           "Lets the manager read kube-system's extension-apiserver-authentication ConfigMap.",

	"MutatingAdmissionPolicy quotagate-gate":                     "The API server adds the gate to new pods of opted-in namespaces itself, with CEL: no webhook, certificate or PodDisruptionBudget (docs/admission.md).",
	"MutatingAdmissionPolicyBinding quotagate-gate":              "Applies it to opted-in namespaces, never kube-system or the release namespace.",
	"ValidatingAdmissionPolicy quotagate-bound-pod-guard":        "Refuses a pod created already bound to a node (`spec.nodeName`) in an opted-in namespace, which cannot be gated, unless a node (or the DaemonSet controller, for an exempt DaemonSet) creates it: what the webhook refuses.",
	"ValidatingAdmissionPolicyBinding quotagate-bound-pod-guard": "Applies it to opted-in namespaces.",
	"ValidatingAdmissionPolicy quotagate-gate-guard":             "Only the manager (and `guard.extraAllowedUsers`) may remove the quotagate gate from a pod, or write the `quotagate.io/` names only the manager writes: a pod's admission record (`admitted-at`, `admitted-by`, `borrowing`, `flavor`) and the finalizer that pins a ResourceClaim (`charged`).",
	"ValidatingAdmissionPolicyBinding quotagate-gate-guard":      "Applies it to pods and ResourceClaims.",
	"ValidatingAdmissionPolicy quotagate-resize-guard":           "Refuses an in-place resize that would take a pod past its budgets (docs/admission.md).",
	"ValidatingAdmissionPolicyBinding quotagate-resize-guard":    "Applies it to opted-in namespaces.",
	"ValidatingAdmissionPolicy quotagate-placement-guard":        "Refuses a change to the tolerations of a pod that is admitted and not bound to a node yet, in an opted-in namespace, unless the manager (or `guard.extraAllowedUsers`) makes it: a toleration could take the pod to nodes it is not charged for (docs/admission.md).",
	"ValidatingAdmissionPolicyBinding quotagate-placement-guard": "Applies it to opted-in namespaces.",

	"ServiceAccount quotagate-webhook":               "The webhook's identity; it has no RBAC at all.",
	"Deployment quotagate-webhook":                   "The mutating webhook that adds the gate to new pods: 2 replicas spread over nodes.",
	"Service quotagate-webhook":                      "The webhook's HTTPS port for the API server, and its `/metrics`.",
	"PodDisruptionBudget quotagate-webhook":          "Keeps a webhook replica through voluntary evictions.",
	"MutatingWebhookConfiguration quotagate-webhook": "Sends pod creates of opted-in namespaces (never kube-system or the release namespace) to the webhook; `caBundle` injected by cert-manager or the manager.",

	"Issuer quotagate-selfsigned":        "Self-signs the chart's CA.",
	"Certificate quotagate-ca":           "The chart's CA (`certManager.caDuration`); it keeps its key when it renews.",
	"Issuer quotagate-ca":                "Signs the serving certificate with the CA.",
	"Certificate quotagate-webhook-cert": "The serving certificate of the webhook and the visibility API, in Secret `quotagate-webhook-tls`; signed by `certManager.issuerRef` when set.",

	"Secret quotagate-webhook-internal-tls":             "Empty at install: the manager's leader keeps the CA and serving certificate in it (docs/certificates.md).",
	"ClusterRole quotagate-manager-cert-rotator":        "Lets the manager inject the CA into the release's webhook configuration and APIService, by name.",
	"ClusterRoleBinding quotagate-manager-cert-rotator": "Binds it to the manager's ServiceAccount.",
	"Role quotagate-manager-cert-rotator":               "Lets the manager fill its certificate Secret, by name.",
	"RoleBinding quotagate-manager-cert-rotator":        "Binds it to the manager's ServiceAccount.",

	"PriorityClass quotagate":          "A priority of the chart's own (`priorityClass.value`) that the webhook and the manager run at unless their `priorityClassName` is set, accepted in any namespace on every cluster, unlike `system-cluster-critical` on GKE.",
	"ServiceMonitor quotagate-manager": "Has the Prometheus Operator scrape the manager (HTTPS and a token with `manager.metricsSecure`).",
	"ServiceMonitor quotagate-webhook": "Has the Prometheus Operator scrape the webhook.",
	"PrometheusRule quotagate":         "quotagate's alerts (docs/runbook.md).",
	"ConfigMap quotagate-dashboard":    "The Grafana dashboard, for kube-prometheus-stack's dashboard sidecar.",

	"ClusterRole quotagate-release-hook":        "Lets the uninstall hook delete the release's admission configuration, by name; deleted with the hook.",
	"ClusterRoleBinding quotagate-release-hook": "Binds it to the manager's ServiceAccount.",
	"Job quotagate-release-gated-pods":          "On uninstall, `/manager release --all` takes the admission step out and removes the gate from every gated pod: nothing is stranded.",
}
