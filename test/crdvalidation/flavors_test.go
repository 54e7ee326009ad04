package crdvalidation_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
)

// The Flavor CRD and the budgets' spec.flavors, spec.flavorFungibility and
// status.flavors on a real kube-apiserver: each bad value is refused with the message
// docs/validation.md shows, the good ones are accepted.

const nodeLabelsMessage = `spec.nodeLabels: Invalid value: nodeLabels: keys must be label keys (1 to 317 characters) and values label values (at most 63 characters)`

// flavorSpec is a Flavor's spec with n labels.
func flavorSpec(n int) string {
	var labels []string
	for i := range n {
		labels = append(labels, fmt.Sprintf("example.com/l%d: v%d", i, i))
	}
	return `{nodeLabels: {` + strings.Join(labels, ", ") + `}}`
}

// tolerations is a Flavor's spec with one label and the tolerations given in YAML.
func tolerations(list string) string {
	return `{nodeLabels: {pool: spot}, tolerations: [` + list + `]}`
}

// flavorsSpec is a budget spec with the flavors given in YAML.
func flavorsSpec(list string) string {
	return `{hard: {requests.cpu: "100"}, flavors: [` + list + `]}`
}

func TestFlavorValidationOnRealAPIServer(t *testing.T) {
	api, cfg := startAPIServer(t)

	bad := map[string]struct {
		obj  *unstructured.Unstructured
		want string // the whole message after `<Kind> "<name>" is invalid: `
	}{}
	var good []*unstructured.Unstructured
	add := func(name string, obj *unstructured.Unstructured, want string) {
		if _, dup := bad[name]; dup {
			t.Fatalf("two cases named %s", name)
		}
		bad[name] = struct {
			obj  *unstructured.Unstructured
			want string
		}{obj, want}
	}

	// The Flavor.
	add("Flavor without spec", object(t, "Flavor", "no-spec", ""), `[spec: Required value`+celSkipped)
	add("Flavor without labels", object(t, "Flavor", "no-labels", `{}`), `[spec.nodeLabels: Required value`+celSkipped)
	add("Flavor with no label", object(t, "Flavor", "zero-labels", `{nodeLabels: {}}`),
		`spec.nodeLabels: Invalid value: 0: spec.nodeLabels in body should have at least 1 properties`)
	add("Flavor with 9 labels", object(t, "Flavor", "nine-labels", flavorSpec(9)),
		`[spec.nodeLabels: Too many: 9: must have at most 8 items`+celSkipped)
	add("Flavor label empty key", object(t, "Flavor", "empty-key", `{nodeLabels: {"": a}}`), nodeLabelsMessage)
	add("Flavor label key too long", object(t, "Flavor", "long-key", fmt.Sprintf(`{nodeLabels: {%s: a}}`, strings.Repeat("k", 318))), nodeLabelsMessage)
	add("Flavor label value too long", object(t, "Flavor", "long-value", fmt.Sprintf(`{nodeLabels: {pool: %s}}`, strings.Repeat("v", 64))), nodeLabelsMessage)
	var nine []string
	for i := range 9 {
		nine = append(nine, fmt.Sprintf(`{key: t%d, operator: Exists}`, i))
	}
	add("Flavor with 9 tolerations", object(t, "Flavor", "nine-tolerations", tolerations(strings.Join(nine, ", "))),
		`[spec.tolerations: Too many: 9: must have at most 8 items`+celSkipped)
	for name, tc := range map[string]struct{ toleration, want string }{
		"operator":          {`{key: spot, operator: Lt, value: "1"}`, `tolerations: operator must be Exists or Equal`},
		"effect":            {`{key: spot, operator: Exists, effect: Evict}`, `tolerations: effect must be NoSchedule, PreferNoSchedule or NoExecute`},
		"empty key":         {`{operator: Equal, value: "true"}`, `tolerations: an empty key needs operator Exists`},
		"Exists with value": {`{key: spot, operator: Exists, value: "true"}`, `tolerations: operator Exists takes no value`},
		"seconds":           {`{key: spot, operator: Exists, effect: NoSchedule, tolerationSeconds: 60}`, `tolerations: tolerationSeconds needs effect NoExecute`},
	} {
		add("Flavor toleration "+name, object(t, "Flavor", "toleration-"+slug(name), tolerations(tc.toleration)), `spec.tolerations: Invalid value: `+tc.want)
	}
	good = append(good,
		object(t, "Flavor", "h100", `{nodeLabels: {cloud.google.com/gke-accelerator: nvidia-h100-80gb}, tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]}`),
		object(t, "Flavor", "eight-labels", flavorSpec(8)),
		object(t, "Flavor", "empty-value", `{nodeLabels: {example.com/spot: ""}}`),
		object(t, "Flavor", "eight-tolerations", tolerations(strings.Join(nine[:8], ", "))),
		object(t, "Flavor", "tolerate-all", tolerations(`{operator: Exists}`)),
		object(t, "Flavor", "tolerate-for", tolerations(`{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 300}, {key: spot, value: "true", effect: PreferNoSchedule}`)))

	// A budget's flavors, for Budget and ClusterBudget alike.
	for _, kind := range []string{"Budget", "ClusterBudget"} {
		k := strings.ToLower(kind)
		add(kind+" duplicate flavor", object(t, kind, k+"-duplicate", flavorsSpec(`{name: h100, hard: {nvidia.com/gpu: 8}}, {name: h100, hard: {nvidia.com/gpu: 4}}`)),
			`spec.flavors[1]: Duplicate value: {"name":"h100"}`)
		for _, field := range limitFields {
			add(kind+" flavor "+field+" name", object(t, kind, k+"-"+strings.ToLower(field)+"-name", flavorsSpec(fmt.Sprintf(`{name: h100, %s: {services: "1"}}`, field))),
				fmt.Sprintf(`spec.flavors[0].%s: Invalid value: unsupported resource name in %s: services%s`, field, field, hardMessage))
			add(kind+" flavor "+field+" negative", object(t, kind, k+"-"+strings.ToLower(field)+"-negative", flavorsSpec(fmt.Sprintf(`{name: a100}, {name: h100, %s: {cpu: "-1"}}`, field))),
				fmt.Sprintf(`spec.flavors[1].%s: Invalid value: %s quantities must not be negative`, field, field))
		}
		var names []string
		for i := range 25 {
			names = append(names, fmt.Sprintf(`"example.com/r%d": "1"`, i))
		}
		add(kind+" flavor with 25 names", object(t, kind, k+"-25-names", flavorsSpec(`{name: h100, hard: {`+strings.Join(names, ", ")+`}}`)),
			`[spec.flavors[0].hard: Too many: 25: must have at most 24 items`+celSkipped)
		add(kind+" flavor negative integer", object(t, kind, k+"-negative-int", flavorsSpec(`{name: h100, hard: {pods: -1}}`)),
			`spec.flavors[0].hard: Invalid value: hard quantities must not be negative`)
		var many []string
		for i := range 17 {
			many = append(many, fmt.Sprintf(`{name: f%d}`, i))
		}
		add(kind+" 17 flavors", object(t, kind, k+"-17-flavors", flavorsSpec(strings.Join(many, ", "))),
			`[spec.flavors: Too many: 17: must have at most 16 items`+celSkipped)
		good = append(good,
			object(t, kind, k+"-16-flavors", flavorsSpec(strings.Join(many[:16], ", "))),
			object(t, kind, k+"-flavors", `{hard: {requests.cpu: "64"}, parent: org, flavors: [{name: h100, hard: {nvidia.com/gpu: 8}, borrowingLimit: {nvidia.com/gpu: 2}, lendingLimit: {nvidia.com/gpu: 4}}, {name: a100, hard: {nvidia.com/gpu: 32}}, {name: spot.cpu}], flavorFungibility: {whenFull: WaitForPreferred, whenCanBorrow: TryNextFlavor, whenCanPreempt: Preempt}}`),
			object(t, kind, k+"-flavors-only", `{flavors: [{name: h100, hard: {nvidia.com/gpu: "0", pods: 0}}], flavorFungibility: {}}`))
	}
	const flavorNamePattern = `'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'`
	for i, name := range []string{"H100", "a..b", "-a", "a_b"} {
		add("flavor name "+name, object(t, "Budget", fmt.Sprintf("bad-flavor-name-%d", i), flavorsSpec(fmt.Sprintf(`{name: %q}`, name))),
			fmt.Sprintf(`spec.flavors[0].name: Invalid value: %q: spec.flavors[0].name in body should match %s`, name, flavorNamePattern))
	}
	add("flavor name too long", object(t, "Budget", "bad-flavor-name-long", flavorsSpec(`{name: `+strings.Repeat("a", 254)+`}`)),
		`[spec.flavors[0].name: Too long: may not be more than 253 bytes`+celSkipped)
	add("flavor without name", object(t, "Budget", "bad-flavor-no-name", flavorsSpec(`{hard: {nvidia.com/gpu: 8}}`)),
		`[spec.flavors[0].name: Required value`+celSkipped)
	add("whenFull", object(t, "Budget", "bad-when-full", `{flavors: [{name: h100}], flavorFungibility: {whenFull: Wait}}`),
		`[spec.flavorFungibility.whenFull: Unsupported value: "Wait": supported values: "TryNextFlavor", "WaitForPreferred"`+celSkipped)
	add("whenCanBorrow", object(t, "ClusterBudget", "bad-when-can-borrow", `{flavors: [{name: h100}], flavorFungibility: {whenCanBorrow: Preempt}}`),
		`[spec.flavorFungibility.whenCanBorrow: Unsupported value: "Preempt": supported values: "Borrow", "TryNextFlavor"`+celSkipped)
	add("whenCanPreempt", object(t, "Budget", "bad-when-can-preempt", `{flavors: [{name: h100}], flavorFungibility: {whenCanPreempt: Borrow}}`),
		`[spec.flavorFungibility.whenCanPreempt: Unsupported value: "Borrow": supported values: "Preempt", "TryNextFlavor"`+celSkipped)

	for name, tc := range bad {
		t.Run("refused/"+name, func(t *testing.T) {
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

	t.Run("defaults", func(t *testing.T) {
		got, err := api.resource(object(t, "Budget", "budget-flavors-only", "")).Get(t.Context(), "budget-flavors-only", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f, _, _ := unstructured.NestedStringMap(got.Object, "spec", "flavorFungibility")
		if f["whenFull"] != "TryNextFlavor" || f["whenCanBorrow"] != "Borrow" || f["whenCanPreempt"] != "TryNextFlavor" {
			t.Errorf("flavorFungibility: {} defaults to %v, want whenFull TryNextFlavor, whenCanBorrow Borrow and whenCanPreempt TryNextFlavor", f)
		}
	})

	// A CRD's printer column shows the first value of a list (.spec.flavors[*].name would
	// show one flavor), so budgets have no Flavors column; a Flavor's labels are one map.
	t.Run("columns", func(t *testing.T) {
		want := `{"cloud.google.com/gke-accelerator":"nvidia-h100-80gb"}`
		if got := column(t, cfg, "flavors/h100", "Labels"); got != want {
			t.Errorf("kubectl get flavor h100: column Labels = %q, want %q", got, want)
		}
	})

	t.Run("update", func(t *testing.T) {
		flv := api.resource(object(t, "Flavor", "", ""))
		update := func(t *testing.T, field string, value any) error {
			t.Helper()
			cur, err := flv.Get(t.Context(), "h100", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := unstructured.SetNestedField(cur.Object, value, "spec", field); err != nil {
				t.Fatal(err)
			}
			_, err = flv.Update(t.Context(), cur, metav1.UpdateOptions{})
			return err
		}
		err := update(t, "nodeLabels", map[string]any{"cloud.google.com/gke-accelerator": "nvidia-a100-80gb"})
		const want = `Flavor.quotagate.io "h100" is invalid: spec.nodeLabels: Invalid value: nodeLabels are immutable: pods admitted on this flavor carry them; create a Flavor with the new labels and name it in the budgets instead`
		if err == nil || err.Error() != want {
			t.Errorf("changing nodeLabels: err = %v, want %s", err, want)
		}
		if err := update(t, "tolerations", []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists"}, map[string]any{"key": "spot", "operator": "Exists"}}); err != nil {
			t.Errorf("changing tolerations: %v", err)
		}
		if err := update(t, "tolerations", nil); err != nil {
			t.Errorf("removing tolerations: %v", err)
		}
	})

	t.Run("status", func(t *testing.T) {
		b := api.resource(object(t, "Budget", "", ""))
		cur, err := b.Get(t.Context(), "budget-flavors", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		flavor := map[string]any{"name": "h100", "hard": map[string]any{"nvidia.com/gpu": "8"}, "used": map[string]any{"nvidia.com/gpu": "6"},
			"borrowed": map[string]any{"nvidia.com/gpu": "1"}, "lent": map[string]any{}}
		cur.Object["status"] = map[string]any{"state": "Open", "admittedPods": int64(3), "gatedPods": int64(1), "flavors": []any{flavor}}
		if _, err := b.UpdateStatus(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
			t.Errorf("a status with flavors, as the manager writes it, was refused: %v", err)
		}
		cur, err = b.Get(t.Context(), "budget-flavors", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Object["status"].(map[string]any)["flavors"] = []any{flavor, map[string]any{"name": "h100"}}
		_, err = b.UpdateStatus(t.Context(), cur, metav1.UpdateOptions{})
		if err == nil || !strings.Contains(err.Error(), `status.flavors[1]: Duplicate value: {"name":"h100"}`) {
			t.Errorf("status.flavors naming h100 twice: err = %v, want a duplicate refused (listType=map)", err)
		}
	})
}

// column reads one cell of an object's row in the table kubectl get prints, from the
// API server (the CRD's printer columns).
func column(t *testing.T, cfg *rest.Config, path, name string) string {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, cfg.Host+"/apis/quotagate.io/v1alpha1/"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var table metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil || len(table.Rows) != 1 {
		t.Fatalf("GET %s as a table: %d rows, %v", path, len(table.Rows), err)
	}
	for i, c := range table.ColumnDefinitions {
		if c.Name == name {
			return fmt.Sprint(table.Rows[0].Cells[i])
		}
	}
	t.Fatalf("GET %s as a table: no column %s in %v", path, name, table.ColumnDefinitions)
	return ""
}
