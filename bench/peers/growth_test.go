package peers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/quotagate/quotagate/bench/figures"
)

func TestScaledLevels(t *testing.T) {
	if diff := cmp.Diff([]int{50, 500, 2500}, scaledLevels([]int{1000, 10000, 50000}, 20)); diff != "" {
		t.Errorf("levels at 1/20 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 1000}, scaledLevels([]int{1, 1000}, 0)); diff != "" {
		t.Errorf("levels at scale 0, as 1 (-want +got):\n%s", diff)
	}
}

func TestGrowthRowsJudgeTheGoals(t *testing.T) {
	r := PeersReport{
		// p50 3 ms against the bare client's 2: 1.5×, within 2×.
		DeepQueue: &deepQueue{Depth: 536, Quotagate: []float64{3, 3, 9}, Bare: []float64{2, 2, 4}, Kueue: []float64{200, 250, 900}},
		MemoryGrowth: []memoryLevel{
			{Pending: 50, Quotagate: figures.Memory{RSS: 40 << 20}, Kueue: figures.Memory{RSS: 80 << 20}},
			// 0.3× at the last level: missed.
			{Pending: 2500, Quotagate: figures.Memory{RSS: 60 << 20, Anon: 20 << 20}, Kueue: figures.Memory{RSS: 200 << 20, Anon: 150 << 20}},
		},
		// 1000 pods in 1 s against 1.25 s: 0.8 of the plain budget's, missed.
		FamilyRelease: &familyRelease{N: 1000, Plain: []float64{1}, Family: []float64{1.25}},
	}
	md := r.growthMarkdown()
	for _, want := range []string{
		"| p50 | 3.0 | 2.0 | 250 | 1.5× | ≤ 2× | yes |",
		"| 50 | 40 | 0 | 80 | 0 | 0.50× | — | — |",
		"| 2500 | 60 | 20 | 200 | 150 | 0.30× | ≤ 0.25× | **no** |",
		"| 1000 pods | 1000 | 800 | 0.80× | ≥ 0.9× | **no** |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("%q not in:\n%s", want, md)
		}
	}
	if md := (PeersReport{}).growthMarkdown(); md != "" {
		t.Errorf("no parts run, yet:\n%s", md)
	}
}
