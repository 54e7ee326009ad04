package peers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/quotagate/quotagate/bench/figures"
)

const (
	// kueueModule is the module `make bench-peers` builds Kueue's manager from.
	kueueModule = "sigs.k8s.io/kueue"
	// kueueNamespaceLabel selects the namespaces Kueue manages (its
	// managedJobsNamespaceSelector and its webhooks' namespaceSelector).
	kueueNamespaceLabel = "bench.quotagate.io/kueue"
	// kueueQueueLabel names the LocalQueue of a plain pod; Kueue manages only pods with it.
	kueueQueueLabel = "kueue.x-k8s.io/queue-name"
	// kueueGate is the scheduling gate Kueue's pod webhook adds and its pod controller removes.
	kueueGate        = "kueue.x-k8s.io/admission"
	kueueSystem      = "kueue-system"
	kueueAPIVersion  = "kueue.x-k8s.io/v1beta2"
	kueueLocalQueue  = "lq"
	kueueFlavor      = "default"
	kueueMemoryQuota = "4Ti"
	// kueueMetricsCertDir is fixed in Kueue's cmd/kueue/main.go.
	kueueMetricsCertDir = "/etc/kueue/metrics/certs"
)

// kueueModuleDir is where the Go module cache holds the Kueue module hack/tools/kueue
// pins: its CRDs, manager configuration and webhook manifests are read from there.
func kueueModuleDir(ctx context.Context, root string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", kueueModule)
	cmd.Dir = filepath.Join(root, "hack", "tools", "kueue")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating %s in the module cache (hack/tools/kueue): %w", kueueModule, err)
	}
	var m struct{ Dir, Version, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", err
	}
	if m.Dir == "" {
		return "", fmt.Errorf("%s is not in the module cache: %s", kueueModule, m.Error)
	}
	return m.Dir, nil
}

// kueueConfiguration is the manager configuration Kueue ships
// (config/components/manager/controller_manager_config.yaml) with only what running it
// as a local process needs changed: its addresses, one replica, a certificate given to
// it, the pod integration alone, and the bench's namespaces as the managed ones.
func kueueConfiguration(shipped []byte, healthAddr string, webhookPort int, certDir string) ([]byte, error) {
	cfg := map[string]any{}
	if err := yaml.Unmarshal(shipped, &cfg); err != nil {
		return nil, fmt.Errorf("reading Kueue's shipped configuration: %w", err)
	}
	cfg["namespace"] = kueueSystem
	cfg["health"] = map[string]any{"healthProbeBindAddress": healthAddr}
	cfg["metrics"] = map[string]any{"bindAddress": "0"}
	cfg["webhook"] = map[string]any{"host": "127.0.0.1", "port": webhookPort, "certDir": certDir}
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	cfg["internalCertManagement"] = map[string]any{"enable": false}
	cfg["managedJobsNamespaceSelector"] = map[string]any{"matchLabels": map[string]any{kueueNamespaceLabel: "true"}}
	cfg["integrations"] = map[string]any{"frameworks": []any{"pod"}}
	return yaml.Marshal(cfg)
}

// kueueWebhooks are Kueue's webhook configurations (config/components/webhook) pointed
// at url with caBundle, and called only for the namespaces Kueue manages here.
func kueueWebhooks(manifests []byte, url string, caBundle []byte) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	var muts []*admissionregistrationv1.MutatingWebhookConfiguration
	var vals []*admissionregistrationv1.ValidatingWebhookConfiguration
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{kueueNamespaceLabel: "true"}}
	cc := func(c admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.WebhookClientConfig {
		path := ""
		if c.Service != nil && c.Service.Path != nil {
			path = *c.Service.Path
		}
		u := url + path
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: caBundle}
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if err.Error() == "EOF" {
				break
			}
			return nil, nil, fmt.Errorf("reading Kueue's webhook manifests: %w", err)
		}
		raw, err := json.Marshal(doc)
		if err != nil {
			return nil, nil, err
		}
		switch doc["kind"] {
		case "MutatingWebhookConfiguration":
			m := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := json.Unmarshal(raw, m); err != nil {
				return nil, nil, err
			}
			m.Name = "kueue-" + m.Name
			for i := range m.Webhooks {
				m.Webhooks[i].ClientConfig = cc(m.Webhooks[i].ClientConfig)
				m.Webhooks[i].NamespaceSelector = sel
			}
			muts = append(muts, m)
		case "ValidatingWebhookConfiguration":
			v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := json.Unmarshal(raw, v); err != nil {
				return nil, nil, err
			}
			v.Name = "kueue-" + v.Name
			for i := range v.Webhooks {
				v.Webhooks[i].ClientConfig = cc(v.Webhooks[i].ClientConfig)
				v.Webhooks[i].NamespaceSelector = sel
			}
			vals = append(vals, v)
		}
	}
	if len(muts) == 0 {
		return nil, nil, fmt.Errorf("no MutatingWebhookConfiguration in Kueue's webhook manifests")
	}
	return muts, vals, nil
}

// startKueue installs Kueue's CRDs and webhooks and runs its manager binary with the
// administrator's kubeconfig (its RBAC is not what is measured).
func (e *env) startKueue(ctx context.Context, bin, root, dir string) (*peerProcess, error) {
	mod, err := kueueModuleDir(ctx, root)
	if err != nil {
		return nil, err
	}
	if _, err := envtest.InstallCRDs(e.Cluster.Config(), envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(mod, "config", "components", "crd", "bases")}, ErrorIfPathMissing: true,
	}); err != nil {
		return nil, fmt.Errorf("installing Kueue's CRDs: %w", err)
	}
	if err := e.Admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueueSystem}}); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", kueueSystem, err)
	}
	certDir := filepath.Join(dir, "kueue-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := figures.LoopbackCert()
	if err != nil {
		return nil, fmt.Errorf("the serving certificate for Kueue: %w", err)
	}
	// Without internal cert management Kueue also reads its metrics server's certificate
	// from a fixed path (cmd/kueue/main.go), where its Deployment mounts one.
	for _, d := range []string{certDir, kueueMetricsCertDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("kueue's certificate directory: %w", err)
		}
		for name, b := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
			if err := os.WriteFile(filepath.Join(d, name), b, 0o600); err != nil {
				return nil, err
			}
		}
	}
	ports := make([]int, 3) // health, webhook, visibility
	for i := range ports {
		if ports[i], err = figures.FreePort(); err != nil {
			return nil, err
		}
	}
	health := fmt.Sprintf("127.0.0.1:%d", ports[0])
	shipped, err := os.ReadFile(filepath.Join(mod, "config", "components", "manager", "controller_manager_config.yaml"))
	if err != nil {
		return nil, err
	}
	cfg, err := kueueConfiguration(shipped, health, ports[1], certDir)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "kueue-config.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		return nil, err
	}
	if err := e.Cluster.WriteKubeconfig(e.Cluster.Config(), filepath.Join(dir, "kueue.kubeconfig")); err != nil {
		return nil, err
	}
	manifests, err := os.ReadFile(filepath.Join(mod, "config", "components", "webhook", "manifests.yaml"))
	if err != nil {
		return nil, err
	}
	muts, vals, err := kueueWebhooks(manifests, fmt.Sprintf("https://127.0.0.1:%d", ports[1]), certPEM)
	if err != nil {
		return nil, err
	}
	args := []string{"--config", cfgPath, "--kubeconfig", filepath.Join(dir, "kueue.kubeconfig"),
		"--visibility-server-port", fmt.Sprint(ports[2]), "--zap-log-level", "error",
		// The on-demand visibility API server reads its certificate from /visibility,
		// where the Deployment mounts one; it serves kubectl's pending-workload listing,
		// no part of admission, so it is off here.
		"--feature-gates", "VisibilityOnDemand=false"}
	p, err := startPeerProcess(ctx, "Kueue manager", bin, args, nil, filepath.Join(dir, "kueue-manager.log"), "http://"+health+"/readyz")
	if err != nil {
		return nil, err
	}
	for _, m := range muts {
		if _, err := e.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("registering %s: %w", m.Name, err)
		}
	}
	for _, v := range vals {
		if _, err := e.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("registering %s: %w", v.Name, err)
		}
	}
	flavor := kueueObject("ResourceFlavor", "", kueueFlavor, map[string]any{})
	if err := figures.Poll(ctx, func(ctx context.Context) (bool, error) { return e.Admin.Create(ctx, flavor) == nil, nil }); err != nil {
		return nil, fmt.Errorf("creating Kueue's ResourceFlavor: %w", err)
	}
	return p, nil
}

func kueueObject(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": kueueAPIVersion, "kind": kind, "spec": spec}}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// kueueQueues creates, for ns, a ClusterQueue named after it with cpu as its nominal
// requests.cpu quota (and memory to spare), and the LocalQueue "lq" in ns pointing at it.
func (e *env) kueueQueues(ctx context.Context, ns, cpu string) error {
	cq := kueueObject("ClusterQueue", "", ns, map[string]any{
		"namespaceSelector": map[string]any{},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{"cpu", "memory"},
			"flavors": []any{map[string]any{"name": kueueFlavor, "resources": []any{
				map[string]any{"name": "cpu", "nominalQuota": cpu},
				map[string]any{"name": "memory", "nominalQuota": kueueMemoryQuota},
			}}},
		}},
	})
	if err := e.Admin.Create(ctx, cq); err != nil {
		return fmt.Errorf("creating ClusterQueue %s: %w", ns, err)
	}
	lq := kueueObject("LocalQueue", ns, kueueLocalQueue, map[string]any{"clusterQueue": ns})
	if err := e.Admin.Create(ctx, lq); err != nil {
		return fmt.Errorf("creating LocalQueue %s/%s: %w", ns, kueueLocalQueue, err)
	}
	return nil
}

// setKueueCPU changes the nominal cpu quota of ns's ClusterQueue.
func (e *env) setKueueCPU(ctx context.Context, ns, cpu string) error {
	patch := fmt.Appendf(nil, `{"spec":{"resourceGroups":[{"coveredResources":["cpu","memory"],"flavors":[{"name":%q,"resources":[{"name":"cpu","nominalQuota":%q},{"name":"memory","nominalQuota":%q}]}]}]}}`,
		kueueFlavor, cpu, kueueMemoryQuota)
	cq := kueueObject("ClusterQueue", "", ns, nil)
	if err := e.Admin.Patch(ctx, cq, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return fmt.Errorf("changing the quota of ClusterQueue %s: %w", ns, err)
	}
	return nil
}

// waitKueuePending waits until ns's ClusterQueue counts n pending workloads: Kueue has
// seen every pod and found it does not fit.
func (e *env) waitKueuePending(ctx context.Context, ns string, n int) error {
	return e.waitKueuePendingWithin(ctx, ns, n, 5*time.Minute)
}

// waitKueuePendingWithin is waitKueuePending for at most timeout.
func (e *env) waitKueuePendingWithin(ctx context.Context, ns string, n int, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		cq := kueueObject("ClusterQueue", "", ns, nil)
		if err := e.Admin.Get(ctx, client.ObjectKey{Name: ns}, cq); err != nil {
			return false, nil
		}
		got, _, _ := unstructured.NestedInt64(cq.Object, "status", "pendingWorkloads")
		return int(got) == n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for ClusterQueue %s to count %d pending workloads: %w", ns, n, err)
	}
	return nil
}

// kueueSpec is a podSpec for Kueue: the queue label; Kueue's webhook adds its gate.
func kueueSpec(s figures.PodSpec) figures.PodSpec {
	s.Labels = map[string]string{kueueQueueLabel: kueueLocalQueue}
	return s
}
