// Package v1alpha1 holds the visibility.quotagate.io/v1alpha1 API, served by the
// quotagate manager through kube-apiserver's aggregation layer: read-only views of the
// pods a Budget or a ClusterBudget keeps gated, in admission order. Nothing here is
// stored; every answer is computed from the leader's queues when it is asked for.
//
// Its resources, as RBAC names them: two subresources of budgets,
//
//	GET /apis/visibility.quotagate.io/v1alpha1/namespaces/NS/budgets/NAME/pendingpods
//	GET /apis/visibility.quotagate.io/v1alpha1/clusterbudgets/NAME/pendingpods
//
// both with the query parameters limit and offset, and one gated pod's place in every
// budget that holds it, by the pod's name (the namespaced resource pendingpods):
//
//	GET /apis/visibility.quotagate.io/v1alpha1/namespaces/NS/pendingpods/NAME
//
// +kubebuilder:object:generate=true
// +groupName=visibility.quotagate.io
package v1alpha1
