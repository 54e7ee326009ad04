package localcluster

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// Cluster-wide settings of the control plane.
const (
	serviceClusterIPRange = "10.0.0.0/24"
	serviceAccountIssuer  = "https://kubernetes.default.svc.cluster.local"

	// KwokNodeAnnotation marks the nodes kwok manages; its value is "fake".
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	// NodeTypeLabel is set to "kwok" on every node the cluster creates.
	NodeTypeLabel = "type"
)

// ports are the TCP ports a cluster listens on, all on 127.0.0.1. The controller
// manager and the scheduler do not serve (--secure-port=0): nothing here scrapes them,
// and fewer ports means fewer chances to collide with another cluster.
type ports struct {
	etcdClient, etcdPeer, apiserver int
}

// layout names the files of a cluster inside its directory.
type layout struct {
	dir string
}

func (l layout) path(elem ...string) string {
	return filepath.Join(append([]string{l.dir}, elem...)...)
}

func (l layout) caCert() string                { return l.path("pki", "ca.crt") }
func (l layout) servingCert() string           { return l.path("pki", "apiserver.crt") }
func (l layout) servingKey() string            { return l.path("pki", "apiserver.key") }
func (l layout) saPrivateKey() string          { return l.path("pki", "sa.key") }
func (l layout) saPublicKey() string           { return l.path("pki", "sa.pub") }
func (l layout) frontProxyCA() string          { return l.path("pki", "front-proxy-ca.crt") }
func (l layout) frontProxyClientCert() string  { return l.path("pki", "front-proxy-client.crt") }
func (l layout) frontProxyClientKey() string   { return l.path("pki", "front-proxy-client.key") }
func (l layout) etcdData() string              { return l.path("etcd") }
func (l layout) kwokHome() string              { return l.path("kwok-home") }
func (l layout) log(name string) string        { return l.path(name + ".log") }
func (l layout) kubeconfig(user string) string { return l.path(user + ".kubeconfig") }
func (l layout) schedulerConfig() string       { return l.path("kube-scheduler.yaml") }

// Leader election of kube-controller-manager and kube-scheduler (one replica each: the
// leases only tell that they are up, cluster.go) tolerates a slow API server: with the
// defaults (15 s lease, 10 s to renew, each request 5 s) a control plane loaded by a
// benchmark lost kube-controller-manager, which exits when it cannot renew, and with it
// the namespaces' default ServiceAccounts (make bench-peers, Kueue's release at 06:20
// on 2026-12-03).
const (
	leaseDuration = "--leader-elect-lease-duration=60s"
	renewDeadline = "--leader-elect-renew-deadline=40s"
	retryPeriod   = "--leader-elect-retry-period=2s"
)

// schedulerConfig is kube-scheduler's configuration file: its --kubeconfig and
// --leader-elect flags are deprecated in favour of these fields.
func schedulerConfig(l layout) []byte {
	return []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: ` + strconv.Quote(l.kubeconfig(KubeScheduler)) + `
  qps: 100
  burst: 200
leaderElection:
  leaderElect: true
  leaseDuration: 60s
  renewDeadline: 40s
  retryPeriod: 2s
`)
}

// adminUser is the kubeconfig (admin.kubeconfig) of the cluster's administrator.
const adminUser = "admin"

// identity is a client certificate's subject, for the admin and each component.
type identity struct {
	kubeconfig string // file name stem in the cluster directory
	user       string
	groups     []string
}

// identities are the client certificates the cluster issues. kwok writes node and pod
// status for every node it manages, like many kubelets at once: it is trusted as an
// administrator rather than given a node identity per fake node.
var identities = []identity{
	{kubeconfig: adminUser, user: "quotagate-admin", groups: []string{"system:masters"}},
	{kubeconfig: KubeControllerManager, user: "system:kube-controller-manager"},
	{kubeconfig: KubeScheduler, user: "system:kube-scheduler"},
	{kubeconfig: Kwok, user: "kwok", groups: []string{"system:masters"}},
}

// commandLine is how one process is run.
type commandLine struct {
	args []string
	env  []string // added to the inherited environment
}

// commandLines builds every process's command line from the layout, the ports and the
// stage files. Options.ExtraArgs come last, so they override.
func commandLines(l layout, p ports, stages []string, extra map[string][]string) map[string]commandLine {
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(p.etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(p.etcdPeer)
	lines := map[string]commandLine{
		Etcd: {args: []string{
			"--name=default",
			"--data-dir=" + l.etcdData(),
			"--listen-client-urls=" + etcdURL,
			"--advertise-client-urls=" + etcdURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=default=" + peerURL,
			// The data is thrown away with the cluster: durability only costs time.
			"--unsafe-no-fsync=true",
			"--log-level=warn",
		}},
		KubeAPIServer: {args: []string{
			"--etcd-servers=" + etcdURL,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			// The endpoint reconciler refuses a loopback address, and nothing in a
			// cluster of fake nodes can reach the kubernetes Service anyway.
			"--endpoint-reconciler-type=none",
			"--secure-port=" + strconv.Itoa(p.apiserver),
			"--tls-cert-file=" + l.servingCert(),
			"--tls-private-key-file=" + l.servingKey(),
			"--client-ca-file=" + l.caCert(),
			"--service-account-issuer=" + serviceAccountIssuer,
			"--service-account-key-file=" + l.saPublicKey(),
			"--service-account-signing-key-file=" + l.saPrivateKey(),
			"--service-cluster-ip-range=" + serviceClusterIPRange,
			"--authorization-mode=Node,RBAC",
			"--allow-privileged=true",
			// The aggregation layer, as kubeadm sets it up: kube-apiserver proxies to an
			// APIService's server with the front-proxy client certificate and the user in
			// X-Remote-* headers, which the server trusts through the front-proxy CA
			// published in kube-system's extension-apiserver-authentication ConfigMap.
			"--requestheader-client-ca-file=" + l.frontProxyCA(),
			"--requestheader-allowed-names=" + frontProxyClient,
			"--requestheader-username-headers=X-Remote-User",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--proxy-client-cert-file=" + l.frontProxyClientCert(),
			"--proxy-client-key-file=" + l.frontProxyClientKey(),
		}},
		KubeControllerManager: {args: []string{
			"--kubeconfig=" + l.kubeconfig(KubeControllerManager),
			"--secure-port=0",
			"--leader-elect=true",
			leaseDuration, renewDeadline, retryPeriod,
			"--controllers=*",
			"--use-service-account-credentials=true",
			"--root-ca-file=" + l.caCert(),
			"--service-cluster-ip-range=" + serviceClusterIPRange,
			"--kube-api-qps=100",
			"--kube-api-burst=200",
		}},
		KubeScheduler: {args: []string{
			"--config=" + l.schedulerConfig(),
			"--secure-port=0",
		}},
		Kwok: {
			args: []string{
				"--kubeconfig=" + l.kubeconfig(Kwok),
				"--manage-all-nodes=false",
				"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
				"--cidr=10.244.0.0/16",
				"--node-ip=10.240.0.1",
			},
			// kwok also loads ~/.kwok/kwok.yaml when it exists: a home of its own keeps
			// the user's configuration out of the cluster.
			env: []string{"HOME=" + l.kwokHome()},
		},
	}
	kwok := lines[Kwok]
	for _, s := range stages {
		kwok.args = append(kwok.args, "--config="+s)
	}
	lines[Kwok] = kwok
	for name, args := range extra {
		line := lines[name]
		line.args = append(line.args, args...)
		lines[name] = line
	}
	return lines
}

// validateExtraArgs rejects ExtraArgs for a process the cluster does not run.
func validateExtraArgs(extra map[string][]string) error {
	for name := range extra {
		known := false
		for _, p := range processOrder {
			known = known || p == name
		}
		if !known {
			return fmt.Errorf("extra args for unknown process %q (want one of %v)", name, processOrder)
		}
	}
	return nil
}
