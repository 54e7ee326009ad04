package charts_test

import (
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
)

// lintMatrix is the set of values TestLint runs `helm lint` (the Helm v4 SDK's) on: the
// defaults, and the knobs a platform engineer turns, alone and together.
func lintMatrix() map[string]map[string]any {
	digest := "sha256:" + strings.Repeat("5e", 32)
	spread := []any{map[string]any{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}}
	return map[string]map[string]any{
		"defaults":            nil,
		"cert-manager":        withCertManager,
		"user's cert issuer":  {"certManager": map[string]any{"enabled": true, "issuerRef": map[string]any{"name": "ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}}},
		"plain-http metrics":  {"manager": map[string]any{"metricsSecure": false}},
		"service monitors":    {"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}}},
		"three replicas each": {"webhook": map[string]any{"replicas": 3}, "manager": map[string]any{"replicas": 3}},
		"image digest":        {"image": map[string]any{"digest": digest}},
		"extra args and env": {
			"webhook": map[string]any{"extraArgs": []any{"--zap-encoder=console"}, "extraEnv": []any{map[string]any{"name": "GOMAXPROCS", "value": "1"}}},
			"manager": map[string]any{"extraArgs": []any{"--zap-encoder=console"}, "extraEnv": []any{map[string]any{"name": "GOMAXPROCS", "value": "2"}}},
		},
		"no priority class":       {"webhook": map[string]any{"priorityClassName": ""}, "manager": map[string]any{"priorityClassName": ""}},
		"topology spread":         {"webhook": map[string]any{"topologySpreadConstraints": spread}, "manager": map[string]any{"topologySpreadConstraints": spread}},
		"common labels":           {"commonLabels": map[string]any{"example.com/team": "platform"}},
		"percentage budgets":      {"webhook": map[string]any{"podDisruptionBudget": map[string]any{"minAvailable": "50%"}}, "manager": map[string]any{"replicas": 2, "podDisruptionBudget": map[string]any{"maxUnavailable": "50%"}}},
		"no budgets, one webhook": {"webhook": map[string]any{"replicas": 1, "podDisruptionBudget": map[string]any{"enabled": false}}},
		"namespace selector": {"webhook": map[string]any{"timeoutSeconds": 5, "failurePolicy": "Ignore", "namespaceSelector": map[string]any{"matchExpressions": []any{
			map[string]any{"key": "example.com/tier", "operator": "NotIn", "values": []any{"system"}},
		}}}},
		"everything optional on": {
			"image":        map[string]any{"repository": "registry.example/qg", "digest": digest, "pullPolicy": "Always"},
			"commonLabels": map[string]any{"example.com/team": "platform"},
			"metrics":      map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
			"certManager":  map[string]any{"enabled": true, "issuerRef": map[string]any{"name": "ca", "kind": "ClusterIssuer"}},
			"manager": map[string]any{"metricsSecure": false, "replicas": 2, "priorityClassName": "", "extraArgs": []any{"--workers=8"},
				"topologySpreadConstraints": spread, "podAnnotations": map[string]any{"a": "b"}},
			"webhook": map[string]any{"replicas": 3, "extraEnv": []any{map[string]any{"name": "A", "value": "b"}}, "topologySpreadConstraints": spread},
			"guard":   map[string]any{"extraAllowedUsers": []any{"admin"}},
			"crds":    map[string]any{"install": false},
		},
	}
}

// The same lint reports, as an error, values the schema refuses: TestLint's clean results
// are not for want of checking. (In lint mode Helm turns the templates' `fail` into an
// info log, so a budget that only the templates can judge, minAvailable against replicas,
// is refused by install and template, which the other tests use, not by lint. That is
// why the schema refuses what it can without knowing the replicas.)
func TestLintReportsABudgetThatBlocksDrains(t *testing.T) {
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{"manager": map[string]any{"replicas": 2, "podDisruptionBudget": map[string]any{"minAvailable": "100%"}}}
	result := lint.RunAll(chartDir(t), values, defaultNamespace, lint.WithKubeVersion(kv))
	found := false
	for _, m := range result.Messages {
		found = found || (m.Severity == support.ErrorSev && strings.Contains(m.Err.Error(), "'/manager/podDisruptionBudget/minAvailable'"))
	}
	if !found {
		t.Errorf("lint messages %v do not report the manager's PodDisruptionBudget", result.Messages)
	}
}
