package estimates

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"time"
)

// oracleDraws is how many workloads Oracle draws per poll.
const oracleDraws = 200

// Holder is a pod that holds one of the budget's slots: its kind (an index of Kinds) and
// how long it has held it.
type Holder struct {
	Kind    int
	Elapsed time.Duration
}

// Oracle is the best estimate anyone can make from durations alone, for the pods of queue
// (their kinds, in queue order) in a FIFO budget of slots pods where running hold slots:
// it knows each kind's true distribution (draw) and the exact queue, draws every run
// still to come draws times (a running pod's from its kind's runs longer than it has
// run), plays the queue out each time, and answers each pod's median start, as an offset
// from now. Its error is the spread of the runs not drawn yet: the floor under any
// estimator's, which the report sets beside the manager's and the baseline's.
func Oracle(running []Holder, queue []int, slots, draws int, draw func(kind int, r *rand.Rand) time.Duration, r *rand.Rand) []time.Duration {
	if len(queue) == 0 || slots <= 0 || draws <= 0 {
		return nil
	}
	starts := make([][]time.Duration, len(queue))
	for i := range starts {
		starts[i] = make([]time.Duration, 0, draws)
	}
	free := make(freeAt, 0, slots)
	for range draws {
		free = free[:0]
		for _, h := range running {
			free = append(free, remaining(h, draw, r))
		}
		for len(free) < slots {
			free = append(free, 0)
		}
		heap.Init(&free)
		for i, k := range queue {
			for len(free) > slots { // more running than slots (a moment of the watch): their earliest ends free none
				heap.Pop(&free)
			}
			start := free[0]
			starts[i] = append(starts[i], start)
			free[0] = start + draw(k, r)
			heap.Fix(&free, 0)
		}
	}
	out := make([]time.Duration, len(queue))
	for i, s := range starts {
		slices.Sort(s)
		out[i] = s[len(s)/2]
	}
	return out
}

// remaining draws how much longer a pod that has held its slot for h.Elapsed holds it:
// a run of its kind longer than that, less what it has run; 0 when a hundred draws found
// none (it has outrun its kind: it may end at any moment).
func remaining(h Holder, draw func(int, *rand.Rand) time.Duration, r *rand.Rand) time.Duration {
	for range 100 {
		if d := draw(h.Kind, r); d > h.Elapsed {
			return d - h.Elapsed
		}
	}
	return 0
}

// freeAt is a min-heap of when each slot is free.
type freeAt []time.Duration

func (f freeAt) Len() int           { return len(f) }
func (f freeAt) Less(i, j int) bool { return f[i] < f[j] }
func (f freeAt) Swap(i, j int)      { f[i], f[j] = f[j], f[i] }
func (f *freeAt) Push(x any)        { *f = append(*f, x.(time.Duration)) }
func (f *freeAt) Pop() any {
	old := *f
	x := old[len(old)-1]
	*f = old[:len(old)-1]
	return x
}
