package charts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/quotagate/quotagate/test/localcluster"
)

// The chart's knobs, set together, on a real kube-apiserver v1.37.2 with its controllers:
// the objects are accepted with strict field validation, and the pods the ReplicaSet
// controller creates get the chart's own PriorityClass and its value (the Priority admission
// plugin resolves it, and would refuse a pod whose class does not exist), the topology
// spread constraints, the extra args and env and the common labels.
func TestKnobsOnRealAPIServer(t *testing.T) {
	const release, namespace = "knobs", "knobs-system"
	ctx := t.Context()
	cluster := localcluster.StartForTest(t, localcluster.Options{Nodes: 2})
	warn := &warnings{}
	cfg := cluster.Config()
	cfg.WarningHandler = warn
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m := mustInstall(t, release, namespace, map[string]any{
		"commonLabels": map[string]any{"example.com/team": "platform"},
		"image":        map[string]any{"digest": "sha256:" + strings.Repeat("ab", 32)},
		"webhook": map[string]any{
			"replicas":                  3,
			"podDisruptionBudget":       map[string]any{"maxUnavailable": "34%"},
			"extraArgs":                 []any{"--zap-encoder=console"},
			"extraEnv":                  []any{map[string]any{"name": "GOMAXPROCS", "value": "2"}},
			"topologySpreadConstraints": []any{map[string]any{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}},
			"namespaceSelector": map[string]any{"matchExpressions": []any{
				map[string]any{"key": "example.com/tier", "operator": "NotIn", "values": []any{"system"}},
			}},
		},
		"manager":       map[string]any{"replicas": 2, "podDisruptionBudget": map[string]any{"minAvailable": "50%"}},
		"priorityClass": map[string]any{"create": true},
	})
	// Everything but the CRDs (not needed here). No cert-manager here: the default install
	// needs none.
	for _, o := range m.Objects {
		if o.GetKind() == "CustomResourceDefinition" {
			continue
		}
		gvr := resourceOf(t, o)
		var ri dynamic.ResourceInterface = dyn.Resource(gvr)
		if o.GetNamespace() != "" {
			ri = dyn.Resource(gvr).Namespace(o.GetNamespace())
		}
		if _, err := ri.Create(ctx, o, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		for _, w := range warn.take() {
			t.Errorf("creating %s %s: warning: %s", o.GetKind(), o.GetName(), w)
		}
	}

	for component, replicas := range map[string]int{"webhook": 3, "manager": 2} {
		selector := "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=" + component
		var pods []corev1.Pod
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, err
			}
			pods = list.Items
			return len(pods) == replicas, nil
		})
		if err != nil {
			events, _ := cs.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
			var why []string
			for _, e := range events.Items {
				why = append(why, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+": "+e.Message)
			}
			t.Fatalf("%s: %d pods, want %d: %v\nevents:\n%s", component, len(pods), replicas, err, strings.Join(why, "\n"))
		}
		for _, p := range pods {
			if p.Spec.PriorityClassName != release+"-quotagate" || p.Spec.Priority == nil || *p.Spec.Priority != 1000000000 {
				t.Errorf("%s pod %s: priorityClassName %q, priority %v; want "+release+"-quotagate, 1000000000",
					component, p.Name, p.Spec.PriorityClassName, p.Spec.Priority)
			}
			if p.Labels["example.com/team"] != "platform" {
				t.Errorf("%s pod %s lacks the common label: %v", component, p.Name, p.Labels)
			}
			if got := p.Spec.Containers[0].Image; !strings.Contains(got, "@sha256:abab") {
				t.Errorf("%s pod %s runs image %q, want the digest", component, p.Name, got)
			}
		}
		if component == "webhook" {
			c := pods[0].Spec.Containers[0]
			if c.Args[len(c.Args)-1] != "--zap-encoder=console" || len(c.Env) != 1 || c.Env[0].Value != "2" {
				t.Errorf("webhook pod: args %v env %v, want the extra arg last and GOMAXPROCS=2", c.Args, c.Env)
			}
			if tsc := pods[0].Spec.TopologySpreadConstraints; len(tsc) != 1 || tsc[0].LabelSelector == nil ||
				tsc[0].LabelSelector.MatchLabels["app.kubernetes.io/component"] != "webhook" {
				t.Errorf("webhook pod: topologySpreadConstraints %+v, want one selecting the webhook's pods", tsc)
			}
		}
	}

	// Both PodDisruptionBudgets let the disruption controller evict pods once every pod is
	// healthy: two of three webhook pods (maxUnavailable 34% of 3 rounds up to 2, so 1
	// must stay), one of two managers (minAvailable 50% of 2 is 1). Counted with every
	// pod healthy: while one is still starting, fewer are allowed.
	pdbs := cs.PolicyV1().PodDisruptionBudgets(namespace)
	for name, want := range map[string]int32{release + "-quotagate-webhook": 2, release + "-quotagate-manager": 1} {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			pdb, err := pdbs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := pdb.Status
			return st.ObservedGeneration == pdb.Generation && st.ExpectedPods > 0 && st.CurrentHealthy == st.ExpectedPods && st.DisruptionsAllowed == want, nil
		})
		if err != nil {
			pdb, _ := pdbs.Get(ctx, name, metav1.GetOptions{})
			t.Errorf("PodDisruptionBudget %s: want %d disruptions allowed with every pod healthy, status %+v: %v", name, want, pdb.Status, err)
		}
	}
}

// resourceOf maps the kinds the chart renders to their resources.
func resourceOf(t *testing.T, o *unstructured.Unstructured) schema.GroupVersionResource {
	t.Helper()
	gvk := o.GroupVersionKind()
	plural := map[string]string{
		"Deployment": "deployments", "Service": "services", "ServiceAccount": "serviceaccounts", "Secret": "secrets",
		"PodDisruptionBudget": "poddisruptionbudgets", "ClusterRole": "clusterroles",
		"ClusterRoleBinding": "clusterrolebindings", "Role": "roles", "RoleBinding": "rolebindings",
		"MutatingWebhookConfiguration":     "mutatingwebhookconfigurations",
		"ValidatingAdmissionPolicy":        "validatingadmissionpolicies",
		"ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
		"APIService":                       "apiservices",
		"PriorityClass":                    "priorityclasses",
	}[gvk.Kind]
	if plural == "" {
		t.Fatalf("no resource known for kind %s", gvk.Kind)
	}
	return gvk.GroupVersion().WithResource(plural)
}
