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

// manager.priorityCeiling reaches the manager as --priority-ceiling, Kubernetes'
// highest user-definable priority by default, and must be an int32.
func TestPriorityCeiling(t *testing.T) {
	for name, tc := range map[string]struct {
		values map[string]any
		want   string
	}{
		"default": {want: "--priority-ceiling=1000000000"},
		"lower":   {values: map[string]any{"manager": map[string]any{"priorityCeiling": 100}}, want: "--priority-ceiling=100"},
	} {
		t.Run(name, func(t *testing.T) {
			m := mustInstall(t, defaultRelease, defaultNamespace, tc.values)
			if args := podSpecOf(t, m, "Deployment", "quotagate-manager").Containers[0].Args; !slices.Contains(args, tc.want) {
				t.Errorf("the manager's args %v lack %s", args, tc.want)
			}
		})
	}
	schemaError(t, map[string]any{"manager": map[string]any{"priorityCeiling": 3000000000}}, "/manager/priorityCeiling")
}

// manager.estimates reaches the manager as --estimate-interval and --estimate-max-pods,
// their defaults by default; "0s" and 0 (estimates off, no bound) are accepted, a
// duration without a unit or a negative bound is not.
func TestEstimates(t *testing.T) {
	for name, tc := range map[string]struct {
		estimates map[string]any
		want      []string
	}{
		"default": {want: []string{"--estimate-interval=5s", "--estimate-max-pods=20000"}},
		"slower, bounded lower": {
			estimates: map[string]any{"interval": "30s", "maxPods": 5000},
			want:      []string{"--estimate-interval=30s", "--estimate-max-pods=5000"},
		},
		"off, unbounded": {
			estimates: map[string]any{"interval": "0s", "maxPods": 0},
			want:      []string{"--estimate-interval=0s", "--estimate-max-pods=0"},
		},
		"a million, not 1e+06": {
			estimates: map[string]any{"maxPods": 1000000},
			want:      []string{"--estimate-interval=5s", "--estimate-max-pods=1000000"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var values map[string]any
			if tc.estimates != nil {
				values = map[string]any{"manager": map[string]any{"estimates": tc.estimates}}
			}
			m := mustInstall(t, defaultRelease, defaultNamespace, values)
			args := podSpecOf(t, m, "Deployment", "quotagate-manager").Containers[0].Args
			for _, want := range tc.want {
				if !slices.Contains(args, want) {
					t.Errorf("the manager's args %v lack %s", args, want)
				}
			}
		})
	}
	schemaError(t, map[string]any{"manager": map[string]any{"estimates": map[string]any{"interval": "5"}}}, "/manager/estimates/interval")
	schemaError(t, map[string]any{"manager": map[string]any{"estimates": map[string]any{"maxPods": -1}}}, "/manager/estimates/maxPods")
	schemaError(t, map[string]any{"manager": map[string]any{"estimates": map[string]any{"intervals": "5s"}}}, "/manager/estimates")
}

// visibility.simulations reaches the manager as the --simulation-* flags that bound each
// what-if, their defaults by default, and not at all without the visibility API; the
// schema refuses a bound of 0, a duration without a unit, a negative share of a CPU and
// a key it does not know.
func TestSimulationLimits(t *testing.T) {
	defaults := []string{"--simulation-max-body-bytes=524288", "--simulation-max-pods=1000", "--simulation-max-containers=10000",
		"--simulation-timeout=20s", "--simulation-concurrency=2", "--simulation-cpu=0.5"}
	for name, tc := range map[string]struct {
		values map[string]any
		want   []string
	}{
		"default": {want: defaults},
		"tighter": {
			values: map[string]any{"visibility": map[string]any{"simulations": map[string]any{
				"maxBodyBytes": 65536, "maxPods": 100, "maxContainers": 400, "timeout": "5s", "concurrency": 1, "cpu": 0.25,
			}}},
			want: []string{"--simulation-max-body-bytes=65536", "--simulation-max-pods=100", "--simulation-max-containers=400",
				"--simulation-timeout=5s", "--simulation-concurrency=1", "--simulation-cpu=0.25"},
		},
		"larger, not in e+ notation": {
			values: map[string]any{"visibility": map[string]any{"simulations": map[string]any{"maxBodyBytes": 2097152, "maxContainers": 1000000, "cpu": 2}}},
			want: []string{"--simulation-max-body-bytes=2097152", "--simulation-max-pods=1000", "--simulation-max-containers=1000000",
				"--simulation-timeout=20s", "--simulation-concurrency=2", "--simulation-cpu=2"},
		},
		"no CPU bound": {
			values: map[string]any{"visibility": map[string]any{"simulations": map[string]any{"cpu": 0}}},
			want:   append(slices.Clone(defaults[:5]), "--simulation-cpu=0"),
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := mustInstall(t, defaultRelease, defaultNamespace, tc.values)
			args := podSpecOf(t, m, "Deployment", "quotagate-manager").Containers[0].Args
			var got []string
			for _, a := range args {
				if strings.HasPrefix(a, "--simulation-") {
					got = append(got, a)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("the manager's --simulation-* args (-want +got):\n%s", diff)
			}
		})
	}
	m := mustInstall(t, defaultRelease, defaultNamespace, map[string]any{"visibility": map[string]any{"enabled": false}})
	for _, a := range podSpecOf(t, m, "Deployment", "quotagate-manager").Containers[0].Args {
		if strings.HasPrefix(a, "--simulation-") {
			t.Errorf("without the visibility API the manager gets %s", a)
		}
	}
	simulations := func(v map[string]any) map[string]any {
		return map[string]any{"visibility": map[string]any{"simulations": v}}
	}
	schemaError(t, simulations(map[string]any{"maxPods": 0}), "/visibility/simulations/maxPods")
	schemaError(t, simulations(map[string]any{"maxBodyBytes": -1}), "/visibility/simulations/maxBodyBytes")
	schemaError(t, simulations(map[string]any{"timeout": "20"}), "/visibility/simulations/timeout")
	schemaError(t, simulations(map[string]any{"cpu": -0.5}), "/visibility/simulations/cpu")
	schemaError(t, simulations(map[string]any{"concurrency": 0}), "/visibility/simulations/concurrency")
	schemaError(t, simulations(map[string]any{"maxPod": 10}), "/visibility/simulations")
}

// manager.preemption reaches the manager as --preemption-cooldown and
// --preemption-max-backoff, 30s and 10m by default; "0s" (evict at once) is accepted, a
// duration without a unit or an unknown key is not.
func TestPreemptionCooldown(t *testing.T) {
	for name, tc := range map[string]struct {
		preemption map[string]any
		want       []string
	}{
		"default": {want: []string{"--preemption-cooldown=30s", "--preemption-max-backoff=10m"}},
		"longer, backing off further": {
			preemption: map[string]any{"cooldown": "2m", "maxBackoff": "1h"},
			want:       []string{"--preemption-cooldown=2m", "--preemption-max-backoff=1h"},
		},
		"off": {
			preemption: map[string]any{"cooldown": "0s"},
			want:       []string{"--preemption-cooldown=0s", "--preemption-max-backoff=10m"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var values map[string]any
			if tc.preemption != nil {
				values = map[string]any{"manager": map[string]any{"preemption": tc.preemption}}
			}
			m := mustInstall(t, defaultRelease, defaultNamespace, values)
			args := podSpecOf(t, m, "Deployment", "quotagate-manager").Containers[0].Args
			for _, want := range tc.want {
				if !slices.Contains(args, want) {
					t.Errorf("the manager's args %v lack %s", args, want)
				}
			}
		})
	}
	schemaError(t, map[string]any{"manager": map[string]any{"preemption": map[string]any{"cooldown": "30"}}}, "/manager/preemption/cooldown")
	schemaError(t, map[string]any{"manager": map[string]any{"preemption": map[string]any{"maxBackoff": "-1m"}}}, "/manager/preemption/maxBackoff")
	schemaError(t, map[string]any{"manager": map[string]any{"preemption": map[string]any{"cooldowns": "30s"}}}, "/manager/preemption")
}
