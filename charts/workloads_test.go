package charts_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// podSpecOf returns the pod template of the Deployment or Job kind/name.
func podSpecOf(t testing.TB, m manifests, kind, name string) corev1.PodSpec {
	t.Helper()
	switch kind {
	case "Deployment":
		var d appsv1.Deployment
		into(t, m.find(t, kind, name), &d)
		return d.Spec.Template.Spec
	case "Job":
		var j batchv1.Job
		into(t, m.find(t, kind, name), &j)
		return j.Spec.Template.Spec
	}
	t.Fatalf("no pod template in kind %s", kind)
	return corev1.PodSpec{}
}

func TestContainerArgs(t *testing.T) {
	for name, tc := range map[string]struct {
		values      map[string]any
		wantWebhook []string
		wantManager []string
	}{
		"defaults": {
			wantWebhook: []string{"--port=9443", "--cert-dir=/tmp/k8s-webhook-server/serving-certs",
				"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081", "--zap-log-level=info"},
			wantManager: []string{"--leader-elect=true", "--leader-election-namespace=quotagate-system",
				"--metrics-bind-address=:8080", "--metrics-secure=true", "--health-probe-bind-address=:8081",
				"--kube-api-qps=500", "--kube-api-burst=1000", "--workers=32", "--hold-uncovered=true", "--watch-secrets=false", "--priority-ceiling=1000000000", "--zap-log-level=info",
				"--estimate-interval=5s", "--estimate-max-pods=20000", "--usage-write-interval=30s", "--preemption-cooldown=30s", "--preemption-max-backoff=10m",
				"--visibility-bind-address=:8443", "--visibility-cert-dir=/tmp/k8s-webhook-server/serving-certs",
				"--simulation-max-body-bytes=524288", "--simulation-max-pods=1000", "--simulation-max-containers=10000",
				"--simulation-timeout=20s", "--simulation-concurrency=2", "--simulation-cpu=0.5",
				// The manager issues the serving certificate (certManager.enabled=false).
				"--webhook-cert-secret=quotagate-webhook-internal-tls", "--webhook-cert-namespace=quotagate-system",
				"--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs", "--webhook-configuration=quotagate-webhook",
				"--webhook-service=quotagate-webhook",
				"--webhook-cert-extra-dns-names=quotagate-visibility.quotagate-system.svc,quotagate-visibility.quotagate-system.svc.cluster.local",
				"--visibility-apiservice=v1alpha1.visibility.quotagate.io"},
		},
		"tuned": {
			values: map[string]any{
				"webhook": map[string]any{"logLevel": "debug"},
				"manager": map[string]any{"kubeAPIQPS": 7.5, "kubeAPIBurst": 15, "workers": 32, "holdUncovered": false,
					"watchSecrets": true, "logLevel": 5, "metricsSecure": false},
				"visibility": map[string]any{"enabled": false},
			},
			wantWebhook: []string{"--port=9443", "--cert-dir=/tmp/k8s-webhook-server/serving-certs",
				"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081", "--zap-log-level=debug"},
			wantManager: []string{"--leader-elect=true", "--leader-election-namespace=quotagate-system",
				"--metrics-bind-address=:8080", "--metrics-secure=false", "--health-probe-bind-address=:8081",
				"--kube-api-qps=7.5", "--kube-api-burst=15", "--workers=32", "--hold-uncovered=false", "--watch-secrets=true", "--priority-ceiling=1000000000", "--zap-log-level=5",
				"--estimate-interval=5s", "--estimate-max-pods=20000", "--usage-write-interval=30s", "--preemption-cooldown=30s", "--preemption-max-backoff=10m",
				"--visibility-bind-address=0",
				"--webhook-cert-secret=quotagate-webhook-internal-tls", "--webhook-cert-namespace=quotagate-system",
				"--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs", "--webhook-configuration=quotagate-webhook",
				"--webhook-service=quotagate-webhook"},
		},
		"cert-manager": {
			values: map[string]any{"certManager": map[string]any{"enabled": true}},
			wantWebhook: []string{"--port=9443", "--cert-dir=/tmp/k8s-webhook-server/serving-certs",
				"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081", "--zap-log-level=info"},
			wantManager: []string{"--leader-elect=true", "--leader-election-namespace=quotagate-system",
				"--metrics-bind-address=:8080", "--metrics-secure=true", "--health-probe-bind-address=:8081",
				"--kube-api-qps=500", "--kube-api-burst=1000", "--workers=32", "--hold-uncovered=true", "--watch-secrets=false", "--priority-ceiling=1000000000", "--zap-log-level=info",
				"--estimate-interval=5s", "--estimate-max-pods=20000", "--usage-write-interval=30s", "--preemption-cooldown=30s", "--preemption-max-backoff=10m",
				"--visibility-bind-address=:8443", "--visibility-cert-dir=/tmp/k8s-webhook-server/serving-certs",
				"--simulation-max-body-bytes=524288", "--simulation-max-pods=1000", "--simulation-max-containers=10000",
				"--simulation-timeout=20s", "--simulation-concurrency=2", "--simulation-cpu=0.5"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := mustInstall(t, defaultRelease, defaultNamespace, tc.values)
			webhook := podSpecOf(t, m, "Deployment", "quotagate-webhook").Containers[0]
			if diff := cmp.Diff([]string{"/webhook"}, webhook.Command); diff != "" {
				t.Errorf("webhook command (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWebhook, webhook.Args); diff != "" {
				t.Errorf("webhook args (-want +got):\n%s", diff)
			}
			manager := podSpecOf(t, m, "Deployment", "quotagate-manager").Containers[0]
			if diff := cmp.Diff([]string{"/manager"}, manager.Command); diff != "" {
				t.Errorf("manager command (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantManager, manager.Args); diff != "" {
				t.Errorf("manager args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImage(t *testing.T) {
	for name, tc := range map[string]struct {
		values     map[string]any
		wantImage  string
		wantPolicy corev1.PullPolicy
	}{
		"the chart's appVersion by default": {nil, "ghcr.io/quotagate/quotagate:v0.3.0", corev1.PullIfNotPresent},
		"a pinned image": {map[string]any{"image": map[string]any{"repository": "registry.example/qg", "tag": "dev", "pullPolicy": "Always"}},
			"registry.example/qg:dev", corev1.PullAlways},
	} {
		t.Run(name, func(t *testing.T) {
			m := mustInstall(t, defaultRelease, defaultNamespace, tc.values)
			for _, w := range []struct{ kind, name string }{{"Deployment", "quotagate-webhook"}, {"Deployment", "quotagate-manager"}, {"Job", ""}} {
				c := podSpecOf(t, m, w.kind, w.name).Containers[0]
				if c.Image != tc.wantImage || c.ImagePullPolicy != tc.wantPolicy {
					t.Errorf("%s %s: image %s (%s), want %s (%s)", w.kind, w.name, c.Image, c.ImagePullPolicy, tc.wantImage, tc.wantPolicy)
				}
			}
		})
	}
}

// Every pod the chart creates passes the restricted Pod Security profile and has resources.
func TestPodsAreRestricted(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, nil)
	wantContainer := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	wantPod := &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	workloads := append(m.all("Deployment"), m.all("Job")...)
	if len(workloads) != 3 {
		t.Fatalf("want 2 Deployments and the uninstall Job, got %d workloads", len(workloads))
	}
	for _, w := range workloads {
		spec := podSpecOf(t, m, w.GetKind(), w.GetName())
		if diff := cmp.Diff(wantPod, spec.SecurityContext); diff != "" {
			t.Errorf("%s %s pod securityContext (-want +got):\n%s", w.GetKind(), w.GetName(), diff)
		}
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			if diff := cmp.Diff(wantContainer, c.SecurityContext); diff != "" {
				t.Errorf("%s %s container %s securityContext (-want +got):\n%s", w.GetKind(), w.GetName(), c.Name, diff)
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("%s %s container %s: want cpu and memory requests and a memory limit, got %v", w.GetKind(), w.GetName(), c.Name, c.Resources)
			}
		}
	}
}

func TestProbesAndPorts(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, nil)
	for name, wantMetricsPort := range map[string]string{"quotagate-webhook": "metrics", "quotagate-manager": "https-metrics"} {
		c := podSpecOf(t, m, "Deployment", name).Containers[0]
		for probe, p := range map[string]*corev1.Probe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe} {
			if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != probe || p.HTTPGet.Port != intstr.FromString("health") {
				t.Errorf("%s: want an HTTP probe on %s at the health port, got %+v", name, probe, p)
			}
		}
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		if ports["health"] != 8081 || ports[wantMetricsPort] != 8080 {
			t.Errorf("%s ports = %v, want health 8081 and %s 8080", name, ports, wantMetricsPort)
		}
	}
	// The webhook Service sends 443 to the container's 9443.
	var svc corev1.Service
	into(t, m.find(t, "Service", "quotagate-webhook"), &svc)
	webhook := podSpecOf(t, m, "Deployment", "quotagate-webhook").Containers[0]
	var https *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == 443 {
			https = &svc.Spec.Ports[i]
		}
	}
	if https == nil || https.TargetPort != intstr.FromString("webhook-server") {
		t.Fatalf("webhook Service ports = %+v, want 443 -> webhook-server", svc.Spec.Ports)
	}
	if webhook.Ports[0].Name != "webhook-server" || webhook.Ports[0].ContainerPort != 9443 {
		t.Errorf("webhook-server port = %+v, want 9443", webhook.Ports[0])
	}
}

func TestWebhookAvailability(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, nil)
	var dep appsv1.Deployment
	into(t, m.find(t, "Deployment", "quotagate-webhook"), &dep)
	if got := ptr.Deref(dep.Spec.Replicas, 0); got != 2 {
		t.Errorf("webhook replicas = %d, want 2", got)
	}
	var pdb policyv1.PodDisruptionBudget
	into(t, m.find(t, "PodDisruptionBudget", "quotagate-webhook"), &pdb)
	if diff := cmp.Diff(ptr.To(intstr.FromInt32(1)), pdb.Spec.MinAvailable); diff != "" {
		t.Errorf("PDB minAvailable (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(dep.Spec.Selector, pdb.Spec.Selector); diff != "" {
		t.Errorf("PDB selects other pods than the webhook Deployment (-deployment +pdb):\n%s", diff)
	}
	anti := dep.Spec.Template.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(anti) != 1 || anti[0].PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" ||
		!cmp.Equal(anti[0].PodAffinityTerm.LabelSelector, dep.Spec.Selector) {
		t.Errorf("webhook anti-affinity = %+v, want preferred spreading of its own pods by hostname", anti)
	}

	var manager appsv1.Deployment
	into(t, mustInstall(t, defaultRelease, defaultNamespace, map[string]any{"manager": map[string]any{"replicas": 3}}).
		find(t, "Deployment", "quotagate-manager"), &manager)
	if got := ptr.Deref(manager.Spec.Replicas, 0); got != 3 {
		t.Errorf("manager replicas = %d, want 3", got)
	}
}

// One ServiceMonitor per Service that serves metrics: the webhook's only where the
// release runs the webhook (admission mode policy has no webhook Service to scrape).
func TestServiceMonitors(t *testing.T) {
	if n := len(mustInstall(t, defaultRelease, defaultNamespace, nil).all("ServiceMonitor")); n != 0 {
		t.Errorf("ServiceMonitors rendered by default: %d, want none", n)
	}
	for mode, want := range map[string][]string{
		"webhook": {"quotagate-manager", "quotagate-webhook"},
		"policy":  {"quotagate-manager"},
	} {
		t.Run(mode, func(t *testing.T) {
			m := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{
				"admission": map[string]any{"mode": mode},
				"metrics":   map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}},
			})
			monitors := m.all("ServiceMonitor")
			var names []string
			for _, sm := range monitors {
				names = append(names, sm.GetName())
			}
			slices.Sort(names)
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("ServiceMonitors (-want +got):\n%s", diff)
			}
			for _, sm := range monitors {
				checkServiceMonitorSelects(t, m, sm)
			}
		})
	}
}

// checkServiceMonitorSelects checks that sm carries the extra label and selects exactly
// one Service of the release, one that has the port it scrapes.
func checkServiceMonitorSelects(t *testing.T, m manifests, sm *unstructured.Unstructured) {
	t.Helper()
	if sm.GetLabels()["release"] != "prom" {
		t.Errorf("ServiceMonitor %s lacks the extra label release=prom", sm.GetName())
	}
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	port := endpoints[0].(map[string]any)["port"]
	matched := 0
	for _, s := range m.all("Service") {
		var svc corev1.Service
		into(t, s, &svc)
		if !labels.SelectorFromSet(sel).Matches(labels.Set(svc.Labels)) {
			continue
		}
		matched++
		found := false
		for _, p := range svc.Spec.Ports {
			found = found || p.Name == port
		}
		if !found {
			t.Errorf("ServiceMonitor %s scrapes port %v, which Service %s does not have", sm.GetName(), port, svc.Name)
		}
	}
	if matched != 1 {
		t.Errorf("ServiceMonitor %s selects %d Services, want 1", sm.GetName(), matched)
	}
}

func TestNotesTellTheNextSteps(t *testing.T) {
	notes := mustInstall(t, defaultRelease, defaultNamespace, nil).Notes
	for _, want := range []string{
		"kubectl label namespace team-a quotagate.io/enabled=true",
		"kind: Budget",
		"kubectl get pods -n team-a -w",
		"-n quotagate-system",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt does not contain %q:\n%s", want, notes)
		}
	}
}
