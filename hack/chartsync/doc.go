// Command chartsync copies what controller-gen generates into the Helm chart, so that the
// chart and the kustomize config (config/) install the same CRDs and the same manager RBAC.
//
// `make manifests` runs it after controller-gen, as `go run ./hack/chartsync`:
//
//   - every config/crd/bases/*.yaml becomes charts/quotagate/templates/crd/<same name>,
//     wrapped in `crds.install`, labelled like the rest of the release, and annotated with
//     helm.sh/resource-policy: keep when `crds.keep` is set (so an uninstall leaves the
//     Budgets in place). CRD templates whose base is gone are removed.
//   - config/rbac/role.yaml (the ClusterRole quotagate-manager, from the manager's
//     kubebuilder RBAC markers) becomes templates/manager-clusterrole.yaml with the
//     release's name and labels. While role.yaml does not exist, the last synced template
//     is kept as it is.
//
// The output depends only on the input files, so `make verify` can regenerate and fail on
// a git diff.
package main
