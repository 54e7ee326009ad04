package charts_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// components are the chart's two Deployments, by the value key that configures each.
var components = map[string]string{"webhook": "quotagate-webhook", "manager": "quotagate-manager"}

// schemaError installs values and checks that the schema refuses them at path.
func schemaError(t *testing.T, values map[string]any, path string) {
	t.Helper()
	_, err := install(defaultRelease, defaultNamespace, values)
	if err == nil {
		t.Fatalf("install succeeded, want a schema error at %s", path)
	}
	if !strings.Contains(err.Error(), "values don't meet the specifications of the schema") ||
		!strings.Contains(err.Error(), "'"+path+"'") {
		t.Errorf("error does not name %s:\n%v", path, err)
	}
}

func TestImageDigest(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	m := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{
		"image": map[string]any{"repository": "registry.example/qg", "tag": "ignored", "digest": digest},
	})
	for _, w := range []struct{ kind, name string }{{"Deployment", "quotagate-webhook"}, {"Deployment", "quotagate-manager"}, {"Job", ""}} {
		if got, want := podSpecOf(t, m, w.kind, w.name).Containers[0].Image, "registry.example/qg@"+digest; got != want {
			t.Errorf("%s %s: image %s, want %s (the digest wins over the tag)", w.kind, w.name, got, want)
		}
	}
	for name, bad := range map[string]string{
		"no algorithm":     strings.Repeat("ab", 32),
		"short":            "sha256:abc",
		"uppercase hex":    "sha256:" + strings.Repeat("AB", 32),
		"other algorithm":  "sha512:" + strings.Repeat("ab", 32),
		"tag-like":         "v0.2.0",
		"digest with repo": "ghcr.io/quotagate/quotagate@sha256:" + strings.Repeat("ab", 32),
	} {
		t.Run(name, func(t *testing.T) {
			schemaError(t, map[string]any{"image": map[string]any{"digest": bad}}, "/image/digest")
		})
	}
}

func TestCommonLabelsOnEveryObject(t *testing.T) {
	common := map[string]any{"example.com/team": "platform", "cost-center": "42"}
	for name, extra := range map[string]map[string]any{
		"self-managed certificate":     nil,
		"cert-manager, chart's own CA": withCertManager,
		"user's issuer, monitors":      {"certManager": map[string]any{"enabled": true, "issuerRef": map[string]any{"name": "ca", "kind": "ClusterIssuer"}}, "metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}, "manager": map[string]any{"replicas": 2}},
	} {
		t.Run(name, func(t *testing.T) {
			values := map[string]any{"commonLabels": common}
			for k, v := range extra {
				values[k] = v
			}
			m := mustInstall(t, defaultRelease, defaultNamespace, values)
			for _, o := range append(append([]*unstructured.Unstructured{}, m.Objects...), m.Hooks...) {
				for k, v := range common {
					if got := o.GetLabels()[k]; got != v {
						t.Errorf("%s %s: label %s = %q, want %q", o.GetKind(), o.GetName(), k, got, v)
					}
				}
			}
			for _, name := range components {
				if labels := podTemplateOf(t, m, name).Labels; labels["example.com/team"] != "platform" {
					t.Errorf("Deployment %s pod template lacks the common labels: %v", name, labels)
				}
			}
		})
	}
	schemaError(t, map[string]any{"commonLabels": map[string]any{"app.kubernetes.io/name": "x"}}, "/commonLabels/app.kubernetes.io~1name")
	schemaError(t, map[string]any{"commonLabels": map[string]any{"tier": 1}}, "/commonLabels/tier")
}

func TestPodAnnotationsAndLabels(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{
		"webhook": map[string]any{"podAnnotations": map[string]any{"example.com/a": "w"}, "podLabels": map[string]any{"l": "w"}},
		"manager": map[string]any{"podAnnotations": map[string]any{"example.com/a": "m"}, "podLabels": map[string]any{"l": "m"}},
	})
	for key, name := range components {
		tmpl := podTemplateOf(t, m, name)
		if got := tmpl.Annotations["example.com/a"]; got != key[:1] {
			t.Errorf("%s pod annotation example.com/a = %q, want %q", key, got, key[:1])
		}
		if got := tmpl.Labels["l"]; got != key[:1] {
			t.Errorf("%s pod label l = %q, want %q", key, got, key[:1])
		}
	}
}

// A label set twice (commonLabels, podLabels, the chart's own) appears once on the pods:
// the chart's selector labels first, then podLabels, then commonLabels.
func TestPodLabelsSetTwice(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{
		"commonLabels": map[string]any{"team": "everyone", "tier": "platform"},
		"webhook":      map[string]any{"podLabels": map[string]any{"team": "webhook-owners", "app.kubernetes.io/component": "other"}},
	})
	labels := podTemplateOf(t, m, "quotagate-webhook").Labels
	for k, want := range map[string]string{"team": "webhook-owners", "tier": "platform", "app.kubernetes.io/component": "webhook"} {
		if labels[k] != want {
			t.Errorf("webhook pod label %s = %q, want %q", k, labels[k], want)
		}
	}
	if got := podTemplateOf(t, m, "quotagate-manager").Labels["team"]; got != "everyone" {
		t.Errorf("manager pod label team = %q, want the common label", got)
	}
}

func podTemplateOf(t *testing.T, m manifests, name string) corev1.PodTemplateSpec {
	t.Helper()
	var out struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := kruntimeFromUnstructured(m.find(t, "Deployment", name), &out); err != nil {
		t.Fatal(err)
	}
	return out.Spec.Template
}

func TestExtraArgsAndEnv(t *testing.T) {
	env := []any{
		map[string]any{"name": "GOMEMLIMIT", "value": "400MiB"},
		map[string]any{"name": "NODE", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "spec.nodeName"}}},
	}
	values := map[string]any{}
	for key := range components {
		values[key] = map[string]any{"extraArgs": []any{"--zap-encoder=console", "--zap-stacktrace-level=panic"}, "extraEnv": env}
	}
	defaults := mustInstall(t, defaultRelease, defaultNamespace, nil)
	m := mustInstall(t, defaultRelease, defaultNamespace, values)
	for key, name := range components {
		base := podSpecOf(t, defaults, "Deployment", name).Containers[0]
		c := podSpecOf(t, m, "Deployment", name).Containers[0]
		// The manager's only env of its own is POD_IP, the address a standby forwards
		// visibility requests to when this replica leads.
		var wantBase []corev1.EnvVar
		if key == "manager" {
			wantBase = []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
		}
		if diff := cmp.Diff(wantBase, base.Env); diff != "" {
			t.Errorf("%s: env by default (-want +got):\n%s", key, diff)
		}
		wantArgs := append(append([]string{}, base.Args...), "--zap-encoder=console", "--zap-stacktrace-level=panic")
		if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
			t.Errorf("%s args: the extra args must follow the chart's (-want +got):\n%s", key, diff)
		}
		wantEnv := append(wantBase,
			corev1.EnvVar{Name: "GOMEMLIMIT", Value: "400MiB"},
			corev1.EnvVar{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		)
		if diff := cmp.Diff(wantEnv, c.Env); diff != "" {
			t.Errorf("%s env (-want +got):\n%s", key, diff)
		}
	}
	schemaError(t, map[string]any{"manager": map[string]any{"extraArgs": "--workers=3"}}, "/manager/extraArgs")
	schemaError(t, map[string]any{"webhook": map[string]any{"extraEnv": []any{map[string]any{"value": "x"}}}}, "/webhook/extraEnv/0")
	schemaError(t, map[string]any{"webhook": map[string]any{"extraEnv": []any{map[string]any{"name": "A", "valu": "x"}}}}, "/webhook/extraEnv/0")
}

func TestTopologySpreadConstraints(t *testing.T) {
	for key, name := range components {
		if tsc := podSpecOf(t, mustInstall(t, defaultRelease, defaultNamespace, nil), "Deployment", name).TopologySpreadConstraints; tsc != nil {
			t.Errorf("%s: topologySpreadConstraints %v by default, want none", key, tsc)
		}
	}
	own := map[string]any{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}
	given := map[string]any{"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
		"labelSelector": map[string]any{"matchLabels": map[string]any{"app": "x"}}}
	values := map[string]any{}
	for key := range components {
		values[key] = map[string]any{"topologySpreadConstraints": []any{own, given}}
	}
	m := mustInstall(t, defaultRelease, defaultNamespace, values)
	for key, name := range components {
		spec := podSpecOf(t, m, "Deployment", name)
		want := []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
					"app.kubernetes.io/name": "quotagate", "app.kubernetes.io/instance": defaultRelease, "app.kubernetes.io/component": key,
				}}},
			{MaxSkew: 2, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}},
		}
		if diff := cmp.Diff(want, spec.TopologySpreadConstraints); diff != "" {
			t.Errorf("%s topologySpreadConstraints (-want +got):\n%s", key, diff)
		}
	}
	schemaError(t, map[string]any{"webhook": map[string]any{"topologySpreadConstraints": []any{
		map[string]any{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Sometimes"},
	}}}, "/webhook/topologySpreadConstraints/0/whenUnsatisfiable")
	schemaError(t, map[string]any{"manager": map[string]any{"topologySpreadConstraints": []any{
		map[string]any{"topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"},
	}}}, "/manager/topologySpreadConstraints/0")
}

// No priority class by default: system-cluster-critical is refused outside kube-system on
// GKE unless a ResourceQuota scoped to it exists there, and the chart must install with
// its defaults on GKE, EKS and AKS. priorityClass.create is the opt-in that works
// everywhere; a component's priorityClassName wins over it.
func TestPriorityClassName(t *testing.T) {
	for name, tc := range map[string]struct {
		values     map[string]any
		want       string
		wantObject bool // the chart's own PriorityClass is rendered
	}{
		"none by default": {values: nil, want: ""},
		"named":           {values: map[string]any{"priorityClassName": "quotagate-high"}, want: "quotagate-high"},
		"system class opted into": {
			values: map[string]any{"priorityClassName": "system-cluster-critical"}, want: "system-cluster-critical",
		},
		"the chart's own": {values: map[string]any{"priorityClass": map[string]any{"create": true}}, want: "quotagate", wantObject: true},
		"a name wins over the chart's own": {
			values:     map[string]any{"priorityClass": map[string]any{"create": true}, "priorityClassName": "quotagate-high"},
			want:       "quotagate-high",
			wantObject: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			values := map[string]any{}
			for k, v := range tc.values {
				if k == "priorityClassName" {
					for key := range components {
						values[key] = map[string]any{k: v}
					}
				} else {
					values[k] = v
				}
			}
			m := mustInstall(t, defaultRelease, defaultNamespace, values)
			for key, name := range components {
				if got := podSpecOf(t, m, "Deployment", name).PriorityClassName; got != tc.want {
					t.Errorf("%s priorityClassName = %q, want %q", key, got, tc.want)
				}
			}
			classes := m.all("PriorityClass")
			if !tc.wantObject {
				if len(classes) != 0 {
					t.Errorf("PriorityClasses rendered: %s, want none", m.names())
				}
				return
			}
			var pc schedulingv1.PriorityClass
			into(t, m.find(t, "PriorityClass", "quotagate"), &pc)
			if pc.Value != 1000000000 || pc.GlobalDefault {
				t.Errorf("PriorityClass quotagate: value %d, globalDefault %v; want 1000000000, false", pc.Value, pc.GlobalDefault)
			}
		})
	}
	schemaError(t, map[string]any{"manager": map[string]any{"priorityClassName": "Not_A_Name"}}, "/manager/priorityClassName")
	// Above 1000000000 is reserved for system classes: the API server would refuse it.
	schemaError(t, map[string]any{"priorityClass": map[string]any{"create": true, "value": 2000000000}}, "/priorityClass/value")
}

// webhook.port moves the webhook's listener and the port the Service sends 443 to;
// webhook.hostNetwork puts the pods on their node's network.
func TestWebhookPortAndHostNetwork(t *testing.T) {
	def := podSpecOf(t, mustInstall(t, defaultRelease, defaultNamespace, nil), "Deployment", "quotagate-webhook")
	if def.HostNetwork || def.DNSPolicy != "" {
		t.Errorf("by default hostNetwork %v, dnsPolicy %q; want the pod network", def.HostNetwork, def.DNSPolicy)
	}
	m := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{"webhook": map[string]any{"port": 10443, "hostNetwork": true}})
	spec := podSpecOf(t, m, "Deployment", "quotagate-webhook")
	if !spec.HostNetwork || spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("hostNetwork %v, dnsPolicy %q; want true, ClusterFirstWithHostNet", spec.HostNetwork, spec.DNSPolicy)
	}
	c := spec.Containers[0]
	if !slices.Contains(c.Args, "--port=10443") {
		t.Errorf("webhook args %v, want --port=10443", c.Args)
	}
	if c.Ports[0].Name != "webhook-server" || c.Ports[0].ContainerPort != 10443 {
		t.Errorf("webhook-server port = %+v, want 10443", c.Ports[0])
	}
	if manager := podSpecOf(t, m, "Deployment", "quotagate-manager"); manager.HostNetwork {
		t.Error("the manager runs on the host network; only the webhook should")
	}
	for _, port := range []int{8080, 80, 70000} {
		schemaError(t, map[string]any{"webhook": map[string]any{"port": port}}, "/webhook/port")
	}
}

func TestWebhookNamespaceSelectorExpressions(t *testing.T) {
	m := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{"webhook": map[string]any{
		"namespaceSelector": map[string]any{"matchExpressions": []any{
			map[string]any{"key": "example.com/tier", "operator": "NotIn", "values": []any{"system", "infra"}},
			map[string]any{"key": "example.com/sandbox", "operator": "DoesNotExist"},
		}},
	}})
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	into(t, m.find(t, "MutatingWebhookConfiguration", ""), &mwc)
	want := selector(
		requirement("quotagate.io/enabled", "In", "true"),
		requirement("kubernetes.io/metadata.name", "NotIn", "kube-system", defaultNamespace),
		requirement("example.com/tier", "NotIn", "system", "infra"),
		requirement("example.com/sandbox", "DoesNotExist"),
	)
	if diff := cmp.Diff(want, mwc.Webhooks[0].NamespaceSelector); diff != "" {
		t.Errorf("namespaceSelector: the opt-in rule must come first, then the user's (-want +got):\n%s", diff)
	}
	for name, tc := range map[string]struct {
		expr map[string]any
		path string
	}{
		"unknown operator":    {map[string]any{"key": "a", "operator": "Maybe", "values": []any{"x"}}, "/webhook/namespaceSelector/matchExpressions/0/operator"},
		"In without values":   {map[string]any{"key": "a", "operator": "In"}, "/webhook/namespaceSelector/matchExpressions/0"},
		"In with no values":   {map[string]any{"key": "a", "operator": "In", "values": []any{}}, "/webhook/namespaceSelector/matchExpressions/0/values"},
		"Exists with values":  {map[string]any{"key": "a", "operator": "Exists", "values": []any{"x"}}, "/webhook/namespaceSelector/matchExpressions/0/values"},
		"no key":              {map[string]any{"operator": "Exists"}, "/webhook/namespaceSelector/matchExpressions/0"},
		"matchLabels instead": {map[string]any{"key": "a", "operator": "Exists", "matchLabels": map[string]any{}}, "/webhook/namespaceSelector/matchExpressions/0"},
	} {
		t.Run(name, func(t *testing.T) {
			schemaError(t, map[string]any{"webhook": map[string]any{"namespaceSelector": map[string]any{"matchExpressions": []any{tc.expr}}}}, tc.path)
		})
	}
}
