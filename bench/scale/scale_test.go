package scale

import (
	"flag"
	"strings"
	"testing"

	"github.com/quotagate/quotagate/bench/figures"
	"github.com/quotagate/quotagate/bench/report"
	"github.com/quotagate/quotagate/test/localcluster"
)

func TestScaleFlags(t *testing.T) {
	parse := func(args ...string) (Options, error) {
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		o := DefaultOptions()
		o.AddFlags(fs)
		if err := fs.Parse(args); err != nil {
			return o, err
		}
		return o, o.validate()
	}
	o, err := parse("-scale", "-sizes", "1000, 10000,50000", "-budgets-per-1000-pods", "5")
	if err != nil {
		t.Fatalf("valid flags refused: %v", err)
	}
	if !o.Enabled || o.sizes.String() != "1000,10000,50000" || o.budgetsPer1000Pods != 5 {
		t.Fatalf("parsed %+v, want -scale on, sizes 1000,10000,50000 and 5 budgets per 1,000 pods", o)
	}
	for _, bad := range [][]string{
		{"-sizes", "10000,1000"},
		{"-sizes", "1000,ten"},
		{"-sizes", "0"},
		{"-namespaces", "0"},
	} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("flags %v accepted, want an error", bad)
		}
	}
}

func TestScaleLayout(t *testing.T) {
	o := DefaultOptions()
	for _, tc := range []struct{ pods, budgets, namespaces int }{
		{100000, 1000, 10}, {1000, 10, 10}, {500, 5, 5}, {50, 1, 1},
	} {
		b, ns := o.layoutFor(tc.pods)
		if b != tc.budgets || ns != tc.namespaces {
			t.Errorf("layoutFor(%d) = %d budgets in %d namespaces, want %d in %d", tc.pods, b, ns, tc.budgets, tc.namespaces)
		}
	}
	// Every pod k goes to budget k mod budgets: the budgets' sizes add up, and each is
	// raised to fit exactly its own.
	total := 0
	for i := range 7 {
		total += podsOf(i, 7, 100)
	}
	if total != 100 || podsOf(0, 7, 100) != 15 || podsOf(6, 7, 100) != 14 {
		t.Fatalf("podsOf over 7 budgets of 100 pods: total %d, first %d, last %d; want 100, 15, 14", total, podsOf(0, 7, 100), podsOf(6, 7, 100))
	}
}

func TestScaleMarkdown(t *testing.T) {
	cpu := map[string]float64{figures.ThisProcess: 2, localcluster.KubeAPIServer: 10, localcluster.Etcd: 3}
	r := scaleReport{
		Command: "go run ./bench -scale", BudgetsPer1000Pods: 10, Namespaces: 10, ReactionReps: 200,
		Sizes: []scalePoint{
			{Pods: 1000, Budgets: 10, HeapBaseBytes: 1 << 20, HeapInuseBytes: 11 << 20, CreateSeconds: 2, CountedSeconds: 1,
				ReactionMillis: report.Summary{N: 200, P50: 10, P99: 20}, ReleaseSeconds: 5, SettledSeconds: 5, ReleaseCPU: cpu},
			{Pods: 10000, Budgets: 100, HeapBaseBytes: 1 << 20, HeapInuseBytes: 101 << 20, CreateSeconds: 20, CountedSeconds: 8,
				ReactionMillis: report.Summary{N: 200, P50: 12, P99: 40}, ReleaseSeconds: 100, SettledSeconds: 100, ReleaseCPU: cpu},
			{Pods: 50000, Budgets: 500, Error: "creating the pods: etcdserver: mvcc: database space exceeded"},
		},
	}
	md := r.Markdown()
	for _, want := range []string{
		"The largest size that completed every step: **10000 pods in 100 budgets**.",
		"release throughput went from 200 to 100 pods/s (×0.50)",
		"reaction p99 from 20.0 to 40.0 ms",
		"| 1000 | 10 | 500 | – | 1.0 | 10.0 / 20.0 | 200 |",
		// 10 MiB over 1,000 pods, then 90 MiB more over 9,000 more pods.
		"| 1000 | 11.0 | 10486 | – |",
		"| 10000 | 101.0 | 10486 | 10486 |",
		// 10 kube-apiserver seconds over 1,000 and 10,000 pods.
		"| 1000 | 2.00 | 10.00 | 3.00 | 15.00 | 3.00 |",
		"| 10000 | 0.20 | 1.00 | 0.30 | 1.50 | 0.15 |",
		"## Where it broke, and notes",
		"- **50000 pods in 500 budgets** (load  → ): creating the pods: etcdserver: mvcc: database space exceeded",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}
