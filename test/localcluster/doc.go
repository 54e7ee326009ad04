// Package localcluster starts a real Kubernetes control plane made of processes
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with fake
// nodes) in a directory, for tests and demos where Docker is not available.
//
// Every process listens on ports chosen at run time, so several clusters can run at
// once. The API server serves TLS with a CA generated per cluster, authorizes with
// Node and RBAC, and trusts an admin client certificate in system:masters; the admin
// kubeconfig is written into the cluster's directory. ServiceAccountConfig hands out
// credentials for a ServiceAccount via the TokenRequest API, so components under test
// run under a real identity and RBAC is what gets exercised.
//
// Each process's output goes to <name>.log in the directory. A process that exits
// while the cluster starts fails Start at once with an error that names it and quotes
// the end of its log. Stop kills every process group the cluster started; it is also
// called when Start fails half-way.
//
// The binaries are found in $QUOTAGATE_KUBE_BIN and $QUOTAGATE_KWOK_BIN, or by default
// in <repo>/bin/kube-v1.37.2 and <repo>/bin/kwok-v0.8.0, which `make tools` builds.
package localcluster
