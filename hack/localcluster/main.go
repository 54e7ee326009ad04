// Command localcluster starts and stops the local control plane that `make cluster-up`
// and `make cluster-down` manage: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok with fake nodes, running in the background from a state
// directory (by default <repo>/_output/localcluster).
//
//	go run ./hack/localcluster up      # start, print the kubeconfig, return
//	go run ./hack/localcluster down    # stop and remove the state
package main

import "os"

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
