package peers

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/quotagate/quotagate/bench/figures"
)

func TestKueueConfigurationKeepsShippedDefaults(t *testing.T) {
	shipped := []byte(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
webhook:
  port: 9443
leaderElection:
  leaderElect: true
controller:
  groupKindConcurrency:
    Pod: 5
clientConnection:
  qps: 50
  burst: 100
integrations:
  frameworks:
  - "batch/job"
  - "pod"
`)
	out, err := kueueConfiguration(shipped, "127.0.0.1:1234", 5678, "/certs")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Kind             string
		ClientConnection struct{ QPS, Burst int }
		Controller       struct {
			GroupKindConcurrency map[string]int `json:"groupKindConcurrency"`
		}
		Webhook struct {
			Host    string
			Port    int
			CertDir string `json:"certDir"`
		}
		LeaderElection               struct{ LeaderElect bool }
		InternalCertManagement       struct{ Enable *bool }
		Integrations                 struct{ Frameworks []string }
		ManagedJobsNamespaceSelector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"managedJobsNamespaceSelector"`
	}
	if err := yaml.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Kind != "Configuration" || cfg.ClientConnection.QPS != 50 || cfg.ClientConnection.Burst != 100 || cfg.Controller.GroupKindConcurrency["Pod"] != 5 {
		t.Errorf("the shipped settings were not kept:\n%s", out)
	}
	if cfg.Webhook.Host != "127.0.0.1" || cfg.Webhook.Port != 5678 || cfg.Webhook.CertDir != "/certs" {
		t.Errorf("webhook = %+v, want 127.0.0.1:5678 serving from /certs", cfg.Webhook)
	}
	if cfg.LeaderElection.LeaderElect || cfg.InternalCertManagement.Enable == nil || *cfg.InternalCertManagement.Enable {
		t.Errorf("want leader election and internal cert management off:\n%s", out)
	}
	if strings.Join(cfg.Integrations.Frameworks, ",") != "pod" {
		t.Errorf("frameworks = %v, want [pod]", cfg.Integrations.Frameworks)
	}
	if cfg.ManagedJobsNamespaceSelector.MatchLabels[kueueNamespaceLabel] != "true" {
		t.Errorf("managedJobsNamespaceSelector = %+v, want the bench's label", cfg.ManagedJobsNamespaceSelector)
	}
}

func TestKueueWebhooksPointAtTheLocalProcess(t *testing.T) {
	manifests := []byte(`---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}
  failurePolicy: Fail
  name: mpod.kb.io
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  sideEffects: None
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate--v1-pod}
  failurePolicy: Fail
  name: vpod.kb.io
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}
  sideEffects: None
`)
	muts, vals, err := kueueWebhooks(manifests, "https://127.0.0.1:9443", []byte("CA"))
	if err != nil {
		t.Fatal(err)
	}
	if len(muts) != 1 || len(vals) != 1 {
		t.Fatalf("got %d mutating and %d validating configurations, want 1 and 1", len(muts), len(vals))
	}
	m, v := muts[0], vals[0]
	if m.Name != "kueue-mutating-webhook-configuration" || v.Name != "kueue-validating-webhook-configuration" {
		t.Errorf("names = %s, %s", m.Name, v.Name)
	}
	cc := m.Webhooks[0].ClientConfig
	if cc.Service != nil || cc.URL == nil || *cc.URL != "https://127.0.0.1:9443/mutate--v1-pod" || string(cc.CABundle) != "CA" {
		t.Errorf("mutating clientConfig = %+v", cc)
	}
	if u := v.Webhooks[0].ClientConfig.URL; u == nil || *u != "https://127.0.0.1:9443/validate--v1-pod" {
		t.Errorf("validating URL = %v", u)
	}
	if sel := m.Webhooks[0].NamespaceSelector; sel == nil || sel.MatchLabels[kueueNamespaceLabel] != "true" {
		t.Errorf("namespaceSelector = %v, want only the bench's Kueue namespaces", sel)
	}
}

func TestPeerRowsJudgeTheGoals(t *testing.T) {
	r := PeersReport{N: 1000,
		// 1000 pods in 1 s vs 100 s: 100× the throughput.
		Quotagate: system{ReleaseSeconds: []float64{1}, FirstUngateSeconds: []float64{0.01},
			ReactionMillis: []float64{10}, CreateToUngateMilli: []float64{20}, CreateToUngateWebhookMilli: []float64{40}, Gated: figures.Memory{RSS: 30 << 20, Anon: 12 << 20, File: 18 << 20}, Idle: figures.Memory{RSS: 20 << 20}},
		// Reaction 15× slower (goal missed), create → ungate 30× (met), RSS 0.2× (met).
		Kueue: system{ReleaseSeconds: []float64{100}, FirstUngateSeconds: []float64{4},
			ReactionMillis: []float64{150}, CreateToUngateMilli: []float64{600}, Gated: figures.Memory{RSS: 150 << 20, Anon: 100 << 20, File: 50 << 20}, Idle: figures.Memory{RSS: 60 << 20}},
		Bare: system{ReleaseSeconds: []float64{0.8}, FirstUngateSeconds: []float64{0.005},
			ReactionMillis: []float64{5}, CreateToUngateMilli: []float64{8}},
	}
	met := map[string]string{}
	for _, row := range r.rows() {
		met[row.Figure] = row.Met
	}
	want := map[string]string{
		"Release throughput, 1000 pods, median of 1 (pods/s)":         "yes",
		"Reaction: a pod finishes → next ungate, p50, 1 samples (ms)": "**no**",
		"Reaction: a pod finishes → next ungate, p99, 1 samples (ms)": "**no**",
		"Create → ungate with room, gate policy, p50, 1 samples (ms)": "yes",
		// The webhook's row (15× here) is beside the default mode's, not judged.
		"Create → ungate with room, webhook, p50, 1 samples (ms)": "—",
		"Manager RSS with 1000 gated pods (MiB)":                  "yes",
		// 10 MiB over 1000 pods against 90 MiB: 0.11×.
		"Manager RSS per gated pod, idle to 1000 gated (KiB)": "yes",
	}
	for fig, w := range want {
		if met[fig] != w {
			t.Errorf("%s: met = %q, want %q (rows: %v)", fig, met[fig], w, met)
		}
	}
	if md := r.Markdown(); !strings.Contains(md, "| Release throughput, 1000 pods, median of 1 (pods/s) | 1000 | 10.0 | 1250 | 100.0× | ≥ 15× | yes |") {
		t.Errorf("markdown table row not found:\n%s", md)
	}
	if md := r.Markdown(); !strings.Contains(md, "| of which private (RssAnon: heap, stacks), 1000 gated pods (MiB) | 12 | 100 | — | 0.12× | — | — |") {
		t.Errorf("private memory row not found:\n%s", md)
	}
	if md := r.Markdown(); !strings.Contains(md, "The bare client, with no quota logic at all, released 125.0× Kueue's throughput and was 75.0× faster") {
		t.Errorf("the bare client's bound not found:\n%s", md)
	}
}

func TestPeerMemoryFloor(t *testing.T) {
	r := PeersReport{N: 1000,
		Quotagate: system{ReleaseSeconds: []float64{1}, Gated: figures.Memory{RSS: 60 << 20, Anon: 16 << 20, File: 44 << 20}, Idle: figures.Memory{RSS: 50 << 20}},
		Kueue:     system{ReleaseSeconds: []float64{100}, Gated: figures.Memory{RSS: 120 << 20, Anon: 70 << 20, File: 50 << 20}, Idle: figures.Memory{RSS: 70 << 20}},
		Bare: system{ReleaseSeconds: []float64{0.8},
			Gated: figures.Memory{RSS: 40 << 20, Anon: 10 << 20, File: 30 << 20}, Idle: figures.Memory{RSS: 36 << 20}},
	}
	md := r.Markdown()
	for _, want := range []string{
		"| Manager RSS with 1000 gated pods (MiB) | 60 | 120 | 40 | 0.50× | ≤ 0.25× | **no** |",
		"| of which mapped files (RssFile: the binary's pages), 1000 gated pods (MiB) | 44 | 50 | 30 | 0.88× | — | — |",
		"| Manager RSS idle, after start (MiB) | 50 | 70 | 36 | 0.71× | — | — |",
		"held 40 MiB with the same pods, 0.33× Kueue's RSS (30 MiB of it mapped binary pages): no manager built on controller-runtime and client-go can hold less. quotagate held 1.5× the bare manager's RSS.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("%q not found in:\n%s", want, md)
		}
	}
}
