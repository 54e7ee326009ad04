package crdvalidation_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/test/localcluster"
)

// The CRDs' validation, on a real kube-apiserver: every bad value in the tables below is
// refused with the message docs/validation.md shows, and the good values are accepted.
// Where CEL cannot afford a check (label syntax inside matchExpressions), the value gets
// through, and the manager's own parse must catch it: that is checked here too.

var (
	budgets        = v1alpha1.GroupVersion.WithResource("budgets")
	clusterBudgets = v1alpha1.GroupVersion.WithResource("clusterbudgets")
	flavors        = v1alpha1.GroupVersion.WithResource("flavors")
)

const testNamespace = "team-a"

// supportedHard is every form of resource name that quotagate accounts.
var supportedHard = []string{
	"cpu", "memory", "ephemeral-storage",
	"requests.cpu", "requests.memory", "requests.ephemeral-storage",
	"limits.cpu", "limits.memory", "limits.ephemeral-storage",
	"hugepages-2Mi", "requests.hugepages-1Gi",
	"nvidia.com/gpu", "requests.nvidia.com/gpu", "example.com/Foo_bar.baz", "x-k8s.io/widget",
	"pods", "count/pods",
	"gpu.deviceclass.resource.k8s.io/devices", "gpu.example.com.deviceclass.resource.k8s.io/devices",
	"requests.deviceclass.resource.kubernetes.io/gpu",
}

// unsupportedHard are names that pods do not consume, or that quotagate cannot account.
var unsupportedHard = []string{
	"services", "cpus", "requests.pods", "requests.storage", "persistentvolumeclaims",
	"limits.nvidia.com/gpu", "limits.hugepages-2Mi", "hugepages-", "hugepages-big",
	"count/services", "count/deployments.apps", "requests.count/foo",
	"example.kubernetes.io/foo", "requests.kubernetes.io/foo",
	"gold.storageclass.storage.k8s.io/requests.storage", "deviceclass.resource.k8s.io/devices",
	"Gpu.deviceclass.resource.k8s.io/devices", "gpu.deviceclass.resource.k8s.io/requests",
	"deviceclass.resource.kubernetes.io/gpu", "requests.deviceclass.resource.kubernetes.io/", "count/resourceclaims.resource.k8s.io",
	"nvidia.com/", "Nvidia.com/gpu",
}

// celSkipped follows a schema error (enum, maxLength, maxProperties): the API server then
// skips the CEL rules, and says so.
const celSkipped = `, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`

const hardMessage = " (supported: cpu, memory, ephemeral-storage, their requests.* and limits.* forms, hugepages-<size> and requests.hugepages-<size>, " +
	"extended resources as <domain>/<name> or requests.<domain>/<name> outside kubernetes.io and k8s.io, " +
	"DRA devices as <class>.deviceclass.resource.k8s.io/devices or requests.deviceclass.resource.kubernetes.io/<class>, pods, count/pods)"

// badSelectors are refused in every selector field: Budget and ClusterBudget podSelector,
// ClusterBudget namespaceSelector. want is the message after "spec.<field>: ".
var badSelectors = map[string]struct {
	selector string
	want     string
}{
	"In without values": {
		selector: `{matchExpressions: [{key: team, operator: In, values: []}]}`,
		want:     `Invalid value: matchExpressions: operators In and NotIn need at least one value`,
	},
	"NotIn without values": {
		selector: `{matchExpressions: [{key: team, operator: NotIn}]}`,
		want:     `Invalid value: matchExpressions: operators In and NotIn need at least one value`,
	},
	"Exists with values": {
		selector: `{matchExpressions: [{key: team, operator: Exists, values: [a]}]}`,
		want:     `Invalid value: matchExpressions: operators Exists and DoesNotExist take no values`,
	},
	"DoesNotExist with values": {
		selector: `{matchExpressions: [{key: team, operator: DoesNotExist, values: [a]}]}`,
		want:     `Invalid value: matchExpressions: operators Exists and DoesNotExist take no values`,
	},
	"unknown operator": {
		selector: `{matchExpressions: [{key: team, operator: Equals, values: [a]}]}`,
		want:     `Invalid value: matchExpressions: operator must be In, NotIn, Exists or DoesNotExist`,
	},
	"operator in lower case": {
		selector: `{matchExpressions: [{key: team, operator: in, values: [a]}]}`,
		want:     `Invalid value: matchExpressions: operator must be In, NotIn, Exists or DoesNotExist`,
	},
	"empty key": {
		selector: `{matchExpressions: [{key: "", operator: Exists}]}`,
		want:     `Invalid value: matchExpressions: key must be a label key: 1 to 317 characters, an optional DNS subdomain prefix and '/', then a name of at most 63`,
	},
	"key too long": {
		selector: fmt.Sprintf(`{matchExpressions: [{key: %s, operator: Exists}]}`, strings.Repeat("k", 318)),
		want:     `Invalid value: matchExpressions: key must be a label key: 1 to 317 characters, an optional DNS subdomain prefix and '/', then a name of at most 63`,
	},
	"matchLabels empty key": {
		selector: `{matchLabels: {"": a}}`,
		want:     `Invalid value: matchLabels: keys must be label keys (1 to 317 characters) and values label values (at most 63 characters)`,
	},
	"matchLabels value too long": {
		selector: fmt.Sprintf(`{matchLabels: {team: %s}}`, strings.Repeat("v", 64)),
		want:     `Invalid value: matchLabels: keys must be label keys (1 to 317 characters) and values label values (at most 63 characters)`,
	},
}

// selectorsCELLetThrough are bad label syntax that CEL cannot afford to check: the API
// server accepts them, and the manager's parse refuses them (InvalidSelector).
var selectorsCELLetThrough = map[string]string{
	"key with a space":           `{matchExpressions: [{key: "my team", operator: Exists}]}`,
	"value that is not a label":  `{matchExpressions: [{key: team, operator: In, values: ["a b"]}]}`,
	"matchLabels key with slash": `{matchLabels: {"a/b/c": x}}`,
	"matchLabels value with /":   `{matchLabels: {team: "a/b"}}`,
}

var goodSelectors = []string{
	`{}`,
	`{matchLabels: {team: a, example.com/tier: gold, empty: ""}}`,
	`{matchExpressions: [{key: team, operator: In, values: [a, b]}, {key: zone, operator: NotIn, values: [x]}, {key: gpu, operator: Exists}, {key: spot, operator: DoesNotExist, values: []}]}`,
}

func TestCRDValidationOnRealAPIServer(t *testing.T) {
	api, _ := startAPIServer(t)

	type refused struct {
		name string
		obj  *unstructured.Unstructured
		want string // the whole message after `<Kind> "<name>" is invalid: `
	}
	var bad []refused
	var good []*unstructured.Unstructured
	add := func(name string, obj *unstructured.Unstructured, want string) {
		bad = append(bad, refused{name: name, obj: obj, want: want})
	}

	// Selectors, in the three places they appear.
	placements := []struct {
		kind, field string
		obj         func(name, sel string) *unstructured.Unstructured
	}{
		{"Budget", "spec.podSelector", func(name, sel string) *unstructured.Unstructured {
			return object(t, "Budget", name, `{hard: {cpu: "1"}, podSelector: `+sel+`}`)
		}},
		{"ClusterBudget", "spec.podSelector", func(name, sel string) *unstructured.Unstructured {
			return object(t, "ClusterBudget", name, `{hard: {cpu: "1"}, namespaceSelector: {}, podSelector: `+sel+`}`)
		}},
		{"ClusterBudget", "spec.namespaceSelector", func(name, sel string) *unstructured.Unstructured {
			return object(t, "ClusterBudget", name, `{hard: {cpu: "1"}, namespaceSelector: `+sel+`}`)
		}},
	}
	for i, p := range placements {
		for name, tc := range badSelectors {
			add(fmt.Sprintf("%s %s %s", p.kind, p.field, name), p.obj(fmt.Sprintf("bad-sel-%d-%s", i, slug(name)), tc.selector), p.field+": "+tc.want)
		}
		for j, sel := range goodSelectors {
			good = append(good, p.obj(fmt.Sprintf("good-sel-%d-%d", i, j), sel))
		}
		for name, sel := range selectorsCELLetThrough {
			good = append(good, p.obj(fmt.Sprintf("through-%d-%s", i, slug(name)), sel))
		}
	}

	// hard: names, quantities, size.
	for i, name := range unsupportedHard {
		spec := fmt.Sprintf(`{hard: {cpu: "1", %q: "1"}}`, name)
		want := fmt.Sprintf(`spec.hard: Invalid value: unsupported resource name in hard: %s%s`, name, hardMessage)
		add("Budget hard name "+name, object(t, "Budget", fmt.Sprintf("bad-hard-%d", i), spec), want)
		add("ClusterBudget hard name "+name, object(t, "ClusterBudget", fmt.Sprintf("bad-hard-%d", i), spec), want)
	}
	for i, name := range supportedHard {
		good = append(good, object(t, "Budget", fmt.Sprintf("good-hard-%d", i), fmt.Sprintf(`{hard: {%q: "2"}}`, name)))
	}
	good = append(good, object(t, "Budget", "good-hard-all", `{hard: {`+strings.Join(quoted(supportedHard), `: "1", `)+`: "1"}}`))
	add("negative quantity", object(t, "Budget", "bad-negative", `{hard: {cpu: "-1"}}`),
		`spec.hard: Invalid value: hard quantities must not be negative`)
	add("not a quantity", object(t, "Budget", "bad-quantity", `{hard: {cpu: "two"}}`),
		`spec.hard.cpu: Invalid value: "two": spec.hard.cpu in body should match '^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'`)
	var many []string
	for i := range 25 {
		many = append(many, fmt.Sprintf(`"example.com/r%d": "1"`, i))
	}
	add("too many names", object(t, "Budget", "bad-many", `{hard: {`+strings.Join(many, ", ")+`}}`),
		`[spec.hard: Too many: 25: must have at most 24 items`+celSkipped)
	add("negative integer", object(t, "Budget", "bad-negative-int", `{hard: {pods: -1}}`),
		`spec.hard: Invalid value: hard quantities must not be negative`)
	good = append(good, object(t, "Budget", "good-zero", `{hard: {cpu: "0", pods: "0"}}`), object(t, "Budget", "good-integers", `{hard: {cpu: 2, pods: 10}}`),
		object(t, "Budget", "good-empty", `{}`))

	// borrowingLimit and lendingLimit: named and bounded as hard is.
	for _, field := range []string{"borrowingLimit", "lendingLimit"} {
		add(field+" name", object(t, "Budget", "bad-"+strings.ToLower(field)+"-name", fmt.Sprintf(`{hard: {cpu: "1"}, parent: org, %s: {services: "1"}}`, field)),
			fmt.Sprintf(`spec.%s: Invalid value: unsupported resource name in %s: services%s`, field, field, hardMessage))
		add(field+" negative", object(t, "Budget", "bad-"+strings.ToLower(field)+"-negative", fmt.Sprintf(`{hard: {cpu: "1"}, parent: org, %s: {cpu: "-1"}}`, field)),
			fmt.Sprintf(`spec.%s: Invalid value: %s quantities must not be negative`, field, field))
		good = append(good, object(t, "Budget", "good-"+strings.ToLower(field), fmt.Sprintf(`{hard: {cpu: "4", memory: 8Gi}, parent: org, %s: {cpu: "2", requests.memory: 4Gi}}`, field)),
			object(t, "ClusterBudget", "good-"+strings.ToLower(field), fmt.Sprintf(`{hard: {cpu: "4"}, parent: org, %s: {cpu: "2"}}`, field)))
	}

	// preemption and fairSharing.
	add("preemption.reclaim", object(t, "Budget", "bad-reclaim", `{parent: org, preemption: {reclaim: Always}}`),
		`[spec.preemption.reclaim: Unsupported value: "Always": supported values: "Any", "LowerPriority", "Never"`+celSkipped)
	add("preemption.withinBudget", object(t, "Budget", "bad-within", `{preemption: {withinBudget: Any}}`),
		`[spec.preemption.withinBudget: Unsupported value: "Any": supported values: "Never", "LowerPriority"`+celSkipped)
	const durationPattern = `'^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$'`
	for i, d := range []string{"forever", "-5s", "10", "1d"} {
		add("preemption.blockedTimeout "+d, object(t, "Budget", fmt.Sprintf("bad-blocked-%d", i), fmt.Sprintf(`{parent: org, preemption: {blockedTimeout: %q}}`, d)),
			fmt.Sprintf(`spec.preemption.blockedTimeout: Invalid value: %q: spec.preemption.blockedTimeout in body should match %s`, d, durationPattern))
	}
	add("fairSharing.weight negative", object(t, "Budget", "bad-weight", `{parent: org, fairSharing: {weight: "-1"}}`),
		`spec.fairSharing.weight: Invalid value: "-1": weight must not be negative`)
	good = append(good,
		object(t, "Budget", "good-preemption", `{parent: org, preemption: {reclaim: LowerPriority, withinBudget: LowerPriority}}`),
		object(t, "ClusterBudget", "good-preemption", `{parent: org, preemption: {reclaim: Never}}`),
		object(t, "Budget", "good-blocked", `{parent: org, preemption: {blockedTimeout: 1h30m}}`),
		object(t, "ClusterBudget", "good-blocked", `{parent: org, preemption: {blockedTimeout: "0.5s"}}`),
		object(t, "Budget", "good-weight", `{parent: org, fairSharing: {weight: "0.5"}}`),
		object(t, "Budget", "good-weight-zero", `{parent: org, fairSharing: {weight: 0}}`))

	// parent, queueingStrategy, state.
	const parentPattern = `'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'`
	for i, parent := range []string{"Team", "a..b", "-a", "a_b", "."} {
		add("parent "+parent, object(t, "Budget", fmt.Sprintf("bad-parent-%d", i), fmt.Sprintf(`{parent: %q}`, parent)),
			fmt.Sprintf(`spec.parent: Invalid value: %q: spec.parent in body should match %s`, parent, parentPattern))
	}
	add("parent too long", object(t, "Budget", "bad-parent-long", `{parent: `+strings.Repeat("a", 254)+`}`),
		`[spec.parent: Too long: may not be more than 253 bytes`+celSkipped)
	add("ClusterBudget names itself", object(t, "ClusterBudget", "self", `{parent: self}`),
		`<nil>: Invalid value: a ClusterBudget cannot name itself as parent`)
	good = append(good, object(t, "Budget", "good-parent", `{parent: ml.department-1}`), object(t, "ClusterBudget", "good-parent", `{parent: ml}`))
	add("queueingStrategy", object(t, "Budget", "bad-strategy", `{queueingStrategy: FIFO}`),
		`[spec.queueingStrategy: Unsupported value: "FIFO": supported values: "StrictFIFO", "BestEffortFIFO"`+celSkipped)
	add("state Closing", object(t, "Budget", "bad-state", `{state: Closing}`),
		`[spec.state: Unsupported value: "Closing": supported values: "Open", "Closed"`+celSkipped)
	add("state lower case", object(t, "ClusterBudget", "bad-state", `{state: open}`),
		`[spec.state: Unsupported value: "open": supported values: "Open", "Closed"`+celSkipped)
	good = append(good, object(t, "Budget", "good-strict-closed", `{queueingStrategy: StrictFIFO, state: Closed}`))

	// A ClusterBudget's podSelector narrows the namespaces it selects; alone it would do nothing.
	add("ClusterBudget podSelector without namespaceSelector", object(t, "ClusterBudget", "bad-podsel-alone", `{podSelector: {matchLabels: {app: web}}}`),
		`spec: Invalid value: podSelector needs namespaceSelector: it narrows the pods of the selected namespaces, and a ClusterBudget without namespaceSelector covers exactly the pods of the budgets that name it as parent`)
	good = append(good, object(t, "ClusterBudget", "good-no-spec", ""), object(t, "ClusterBudget", "good-empty-spec", `{}`))

	for _, tc := range bad {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			err := api.create(t.Context(), tc.obj)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("creating %s: err = %v, want it refused as invalid", tc.obj.GetName(), err)
			}
			want := fmt.Sprintf("%s.quotagate.io %q is invalid: %s", tc.obj.GetKind(), tc.obj.GetName(), tc.want)
			if got := err.Error(); got != want {
				t.Errorf("creating %s:\n got  %s\n want %s", tc.obj.GetName(), got, want)
			}
		})
	}
	for _, obj := range good {
		t.Run("accepted/"+obj.GetKind()+"/"+obj.GetName(), func(t *testing.T) {
			if err := api.create(t.Context(), obj); err != nil {
				t.Errorf("creating %s %v: %v", obj.GetKind(), obj.Object["spec"], err)
			}
		})
	}

	t.Run("status", func(t *testing.T) {
		obj := object(t, "Budget", "status", `{hard: {cpu: "1"}}`)
		if err := api.create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
		for field, tc := range map[string]struct {
			value any
			want  string
		}{
			"state":              {"Opening", `[status.state: Unsupported value: "Opening": supported values: "Open", "Closing", "Closed"` + celSkipped},
			"admittedPods":       {int64(-1), `status.admittedPods: Invalid value: -1: admittedPods in body should be greater than or equal to 0`},
			"gatedPods":          {int64(-1), `status.gatedPods: Invalid value: -1: gatedPods in body should be greater than or equal to 0`},
			"observedGeneration": {int64(-1), `status.observedGeneration: Invalid value: -1: observedGeneration in body should be greater than or equal to 0`},
		} {
			cur, err := api.resource(obj).Get(t.Context(), obj.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := unstructured.SetNestedField(cur.Object, tc.value, "status", field); err != nil {
				t.Fatal(err)
			}
			_, err = api.resource(obj).UpdateStatus(t.Context(), cur, metav1.UpdateOptions{})
			want := fmt.Sprintf("Budget.quotagate.io %q is invalid: %s", obj.GetName(), tc.want)
			if err == nil || err.Error() != want {
				t.Errorf("status.%s = %v: err = %v, want %s", field, tc.value, err, want)
			}
		}
		cur, err := api.resource(obj).Get(t.Context(), obj.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Object["status"] = map[string]any{"state": "Closing", "admittedPods": int64(2), "gatedPods": int64(0), "observedGeneration": int64(1), "used": map[string]any{"requests.cpu": "1"}}
		if _, err := api.resource(obj).UpdateStatus(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
			t.Errorf("a status the manager writes was refused: %v", err)
		}
	})
}

// TestManagerAgreesWithCRD: the manager accounts every hard name the API server accepts
// and refuses every one it refuses (an older CRD lets them through), and refuses the
// selectors CEL lets through.
func TestManagerAgreesWithCRD(t *testing.T) {
	for _, name := range supportedHard {
		if _, err := quota.NormalizeHard(corev1.ResourceList{corev1.ResourceName(name): resourceOne}); err != nil {
			t.Errorf("hard name %s: the API server accepts it, the manager refuses it: %v", name, err)
		}
	}
	for _, name := range unsupportedHard {
		if _, err := quota.NormalizeHard(corev1.ResourceList{corev1.ResourceName(name): resourceOne}); err == nil {
			t.Errorf("hard name %s: the API server refuses it, the manager accounts it", name)
		}
	}
	for name, sel := range selectorsCELLetThrough {
		obj := object(t, "ClusterBudget", "cb", `{namespaceSelector: `+sel+`}`)
		cb := &v1alpha1.ClusterBudget{}
		if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, cb); err != nil {
			t.Fatal(err)
		}
		if b := quota.ClusterBudgetFromAPI(cb); b.SpecError == nil || b.NamespaceSelector == nil {
			t.Errorf("%s: the manager accepts %s (SpecError %v, selector %v); it must refuse it and hold what it might cover", name, sel, b.SpecError, b.NamespaceSelector)
		}
	}
}

var resourceOne = resource.MustParse("1")

// startAPIServer starts a local kube-apiserver with quotagate's CRDs and the namespace
// testNamespace, and returns a client for the objects under test and its config.
func startAPIServer(t *testing.T) (*apiClient, *rest.Config) {
	t.Helper()
	cluster := localcluster.StartForTest(t, localcluster.Options{Nodes: 1})
	cfg := cluster.Config()
	if err := testbed.InstallCRDs(cfg, repoRoot()); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": testNamespace}}}
	if _, err := dyn.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	api := &apiClient{dyn: dyn}
	return api, cfg
}

type apiClient struct{ dyn dynamic.Interface }

func (a *apiClient) resource(obj *unstructured.Unstructured) dynamic.ResourceInterface {
	switch obj.GetKind() {
	case "ClusterBudget":
		return a.dyn.Resource(clusterBudgets)
	case "Flavor":
		return a.dyn.Resource(flavors)
	case "ClusterBudgetWindow":
		return a.dyn.Resource(v1alpha1.GroupVersion.WithResource("clusterbudgetwindows"))
	case "BudgetWindow":
		return a.dyn.Resource(v1alpha1.GroupVersion.WithResource("budgetwindows")).Namespace(obj.GetNamespace())
	}
	return a.dyn.Resource(budgets).Namespace(obj.GetNamespace())
}

func (a *apiClient) create(ctx context.Context, obj *unstructured.Unstructured) error {
	_, err := a.resource(obj).Create(ctx, obj, metav1.CreateOptions{FieldValidation: "Strict"})
	return err
}

// object builds a Budget or BudgetWindow (in testNamespace), ClusterBudget, Flavor or
// ClusterBudgetWindow from its spec in YAML; an empty spec leaves spec out.
func object(t *testing.T, kind, name, spec string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: kind})
	obj.SetName(name)
	if kind == "Budget" || kind == "BudgetWindow" {
		obj.SetNamespace(testNamespace)
	}
	if spec != "" {
		var s map[string]any
		if err := yaml.Unmarshal([]byte(spec), &s); err != nil {
			t.Fatalf("spec %s: %v", spec, err)
		}
		obj.Object["spec"] = s
	}
	return obj
}

func slug(s string) string {
	return strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return '-'
	}, s), "-")
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

// repoRoot is the module's root: go test runs a package's tests in its directory.
func repoRoot() string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return root
}
