// Command demo is `make demo`: it shows quotagate queueing a burst of Jobs against a
// Budget on a local control plane, with no cluster and no Docker.
//
// It builds the webhook and manager, starts a local control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok nodes) in
// _output/demo, installs quotagate from its Helm chart the way the e2e tests do
// (test/localinstall), creates the namespace "demo" with a Budget of 6 CPUs and
// submits 30 one-CPU Jobs of mixed priorities that run 1 to 6 seconds each. While the
// burst drains it prints a progress line per budget twice a second and a line for
// every pod that changes state; then it checks that every Job succeeded and that the
// admitted CPU never went over the budget. Then it submits 8 Jobs etl-0 to etl-7 of a
// kind never run in the namespace, declaring no duration, that run 20 s each: the
// Budget admits six, and it prints etl-6's first estimated start from the visibility
// API (learned from the burst's runs, and saying so), then whether etl-6's admission
// fell within its range. Last it prints how to look around with kubectl.
//
// Each of its six steps is numbered, and a step that takes long (a cold build of the
// webhook and manager) says every 15 seconds that it still runs and for how long.
//
// By default it stops everything when it is done. With --keep it leaves the control
// plane and quotagate running until Ctrl-C, so that you can use kubectl. It exits
// non-zero if anything fails, or when --timeout passes.
//
// make demo builds it, the webhook, the manager and the kubectl plugin into
// _output/demo-bin with the Makefile's build flags and runs it with --bin-dir there;
// make demo KEEP=1 adds --keep, and after make demo finds everything built:
//
//	make demo [KEEP=1]
//	go run ./hack/demo [--keep] [--bin-dir DIR] [--jobs 30] [--cpu 6] [--timeout 10m]
package main
