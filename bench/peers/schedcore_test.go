package peers

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/test/localcluster"
)

// BenchmarkCoreOnKueueScenario replays Kueue's baseline scheduler performance scenario
// (the plan `make bench-peers` runs, at 1/50, 1/5 and full size) through quotagate's
// admission core alone, on a simulated clock: no API server, no watch, no patch. Each
// workload's pods arrive gated at their creation time, in the Budgets and ClusterBudgets
// the bench creates; after every arrival or end, Admit runs and each admission is
// confirmed at once, and the workload ends its runtime after its last pod's admission.
// It measures what the core itself costs on the scenario (CPU per event), which the
// full system's figure mixes with kube-apiserver's, and checks the core against the
// ideal replay: with no delay at all, both admit in the same order rules, so their
// mean times to admission must agree, but for the lend hold (quota.DefaultLendHold: a
// lender's freed quota kept for its own next pods for 5 s), which the ideal does not
// have: each size runs without it and with the manager's default.
func BenchmarkCoreOnKueueScenario(b *testing.B) {
	wd, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	root, err := localcluster.RepoRoot(wd)
	if err != nil {
		b.Fatal(err)
	}
	mod, err := kueueModuleDir(b.Context(), root)
	if err != nil {
		b.Skipf("Kueue's module is not in the module cache (make bench-peers fetches it): %v", err)
	}
	c, err := readSchedConfig(mod)
	if err != nil {
		b.Fatal(err)
	}
	for _, scale := range []int{50, 5, 1} {
		p, err := c.plan(scale)
		if err != nil {
			b.Fatal(err)
		}
		idealAdmitted, _ := idealReplay(p)
		for _, hold := range []time.Duration{0, quota.DefaultLendHold} {
			b.Run(fmt.Sprintf("workloads=%d/lend-hold=%s", len(p.Workloads), hold), func(b *testing.B) {
				var r coreReplayResult
				for b.Loop() {
					var err error
					if r, err = replayOnCore(p, hold); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(r.events), "ns/event")
				b.ReportMetric(meanSeconds(p, r.admitted), "core-mean-admit-s")
				b.ReportMetric(meanSeconds(p, idealAdmitted), "ideal-mean-admit-s")
			})
		}
	}
}
