package estimates

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestOracleFIFO(t *testing.T) {
	s := time.Second
	constant := func(kind int, _ *rand.Rand) time.Duration { return []time.Duration{10 * s, 30 * s}[kind] }
	r := rand.New(rand.NewPCG(1, 2))
	for name, tc := range map[string]struct {
		running []Holder
		queue   []int
		want    []time.Duration
	}{
		"a free slot first, then the running pod's end, then the first admitted one's": {
			running: []Holder{{Kind: 0, Elapsed: 5 * s}},
			queue:   []int{0, 1, 0},
			want:    []time.Duration{0, 5 * s, 10 * s},
		},
		"both slots held: the earliest end first": {
			running: []Holder{{Kind: 1, Elapsed: 10 * s}, {Kind: 0, Elapsed: 2 * s}},
			queue:   []int{1, 0, 0},
			want:    []time.Duration{8 * s, 20 * s, 30 * s},
		},
		"a pod that outran its kind may end at once": {
			running: []Holder{{Kind: 0, Elapsed: time.Minute}, {Kind: 0, Elapsed: time.Minute}},
			queue:   []int{0},
			want:    []time.Duration{0},
		},
		"more running than slots: the first end frees the slot": {
			running: []Holder{{Kind: 0, Elapsed: 0}, {Kind: 0, Elapsed: 4 * s}, {Kind: 0, Elapsed: 8 * s}},
			queue:   []int{0},
			want:    []time.Duration{6 * s},
		},
		"two more running than slots: the third end frees the slot": {
			running: []Holder{{Kind: 0, Elapsed: 0}, {Kind: 0, Elapsed: 3 * s}, {Kind: 0, Elapsed: 4 * s}, {Kind: 0, Elapsed: 8 * s}},
			queue:   []int{0, 0},
			want:    []time.Duration{7 * s, 10 * s},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := Oracle(tc.running, tc.queue, 2, 5, constant, r)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
		})
	}
}

// With random runs the oracle answers each pod's median start: one slot, runs of 1 or
// 3 s at even odds, so the second pod in the queue starts after one run (1 or 3 s:
// median 1 or 3), the third after two (2, 4, 4 or 6 s: median 4).
func TestOracleMedian(t *testing.T) {
	s := time.Second
	coin := func(_ int, r *rand.Rand) time.Duration { return []time.Duration{s, 3 * s}[r.IntN(2)] }
	got := Oracle(nil, []int{0, 0, 0}, 1, 2001, coin, rand.New(rand.NewPCG(3, 4)))
	if got[0] != 0 || (got[1] != s && got[1] != 3*s) || got[2] != 4*s {
		t.Errorf("median starts %v, want 0, 1s or 3s, and 4s", got)
	}
}
