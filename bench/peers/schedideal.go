package peers

import (
	"container/heap"
	"slices"
	"time"
)

// idealReplay admits the plan's workloads with no delay at all: each workload arrives
// exactly at its creation time and ends exactly Runtime after its admission, and at
// every arrival or end the queues are served at once, in quotagate's order:
//
//   - within a queue: priority (higher first), then creation time, then the plan's
//     order; BestEffortFIFO, so a workload that does not fit does not hold back the ones
//     behind it;
//   - first every workload that fits within its queue's nominal quota (and the cohort's
//     unused quota), queue by queue; then, in the cohort's order, the ones that borrow
//     (up to the queue's borrowing limit), but only while no sibling has a waiting
//     workload that would fit within its own nominal quota (lent quota comes back first
//     to its lender);
//   - no preemption (see runSched).
//
// It returns each workload's admission time, as an offset from the start, and the
// wall time: when the last workload ends.
func idealReplay(p schedPlan) (admitted []time.Duration, wall time.Duration) {
	admitted = make([]time.Duration, len(p.Workloads))
	queues := map[string]*idealQueue{}
	cohorts := map[string]*idealCohort{}
	for _, q := range p.Queues {
		c := cohorts[q.Cohort]
		if c == nil {
			c = &idealCohort{}
			cohorts[q.Cohort] = c
		}
		c.capMilli += q.NominalMilli
		iq := &idealQueue{q: q, cohort: c}
		c.queues = append(c.queues, iq)
		queues[q.Name] = iq
	}
	arrivals := p.arrivalOrder()
	var ends endHeap
	next := 0
	for next < len(arrivals) || ends.Len() > 0 {
		now := p.nextEvent(arrivals, next, ends)
		touched := map[*idealCohort]bool{}
		for ends.Len() > 0 && ends[0].at == now {
			e := heap.Pop(&ends).(idealEnd)
			w := p.Workloads[e.w]
			q := queues[w.Queue]
			q.useMilli -= w.milli()
			q.cohort.useMilli -= w.milli()
			touched[q.cohort] = true
			wall = max(wall, now)
		}
		for next < len(arrivals) && p.Workloads[arrivals[next]].At == now {
			i := arrivals[next]
			q := queues[p.Workloads[i].Queue]
			q.insert(p, i)
			touched[q.cohort] = true
			next++
		}
		for c := range touched {
			for _, i := range c.admit(p) {
				admitted[i] = now
				heap.Push(&ends, idealEnd{at: now + p.Workloads[i].Runtime, w: i})
			}
		}
	}
	return admitted, wall
}

type idealCohort struct {
	capMilli, useMilli int64
	queues             []*idealQueue
}

type idealQueue struct {
	q        schedQueue
	cohort   *idealCohort
	useMilli int64
	waiting  []int // workload indexes in the queue's order
}

// insert puts workload i into the queue's order (idealBefore).
func (q *idealQueue) insert(p schedPlan, i int) {
	at, _ := slices.BinarySearchFunc(q.waiting, i, func(x, target int) int {
		if idealBefore(p, x, target) {
			return -1
		}
		return 1
	})
	q.waiting = slices.Insert(q.waiting, at, i)
}

// fits says whether workload i fits in q now, within its nominal quota only or up to its
// borrowing limit.
func (q *idealQueue) fits(p schedPlan, i int, borrowing bool) bool {
	need := p.Workloads[i].milli()
	limit := q.q.NominalMilli
	if borrowing {
		if q.q.BorrowMilli < 0 {
			limit = q.cohort.capMilli
		} else {
			limit += q.q.BorrowMilli
		}
	}
	return q.useMilli+need <= limit && q.cohort.useMilli+need <= q.cohort.capMilli
}

func (q *idealQueue) take(p schedPlan, at int) int {
	i := q.waiting[at]
	need := p.Workloads[i].milli()
	q.useMilli += need
	q.cohort.useMilli += need
	q.waiting = slices.Delete(q.waiting, at, at+1)
	return i
}

// admit admits what fits in c now, in the order idealReplay states, and returns the
// admitted workloads.
func (c *idealCohort) admit(p schedPlan) []int {
	var out []int
	for _, q := range c.queues {
		for at := 0; at < len(q.waiting); {
			if q.fits(p, q.waiting[at], false) {
				out = append(out, q.take(p, at))
				continue
			}
			at++
		}
	}
	// A waiting workload within its own nominal quota holds back every borrower: it
	// did not fit above only because the cohort's quota is lent out.
	for _, q := range c.queues {
		for _, i := range q.waiting {
			need := p.Workloads[i].milli()
			if q.useMilli+need <= q.q.NominalMilli {
				return out
			}
		}
	}
	for {
		var best *idealQueue
		bestAt := -1
		for _, q := range c.queues {
			for at, i := range q.waiting {
				if !q.fits(p, i, true) {
					continue
				}
				if best == nil || idealBefore(p, i, best.waiting[bestAt]) {
					best, bestAt = q, at
				}
				break
			}
		}
		if best == nil {
			return out
		}
		out = append(out, best.take(p, bestAt))
	}
}

// idealBefore is the order of a queue and of a cohort: priority, then creation time,
// then the plan's order.
func idealBefore(p schedPlan, a, b int) bool {
	wa, wb := p.Workloads[a], p.Workloads[b]
	if wa.Priority != wb.Priority {
		return wa.Priority > wb.Priority
	}
	if wa.At != wb.At {
		return wa.At < wb.At
	}
	return a < b
}

type idealEnd struct {
	at time.Duration
	w  int
}

// endHeap orders ends by time, then workload index, so the replay is deterministic.
type endHeap []idealEnd

func (h endHeap) Len() int { return len(h) }
func (h endHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].w < h[j].w
}
func (h endHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)   { *h = append(*h, x.(idealEnd)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// arrivalOrder is the plan's workloads by creation time (the plan's order among equals).
func (p schedPlan) arrivalOrder() []int {
	arrivals := make([]int, len(p.Workloads))
	for i := range arrivals {
		arrivals[i] = i
	}
	slices.SortStableFunc(arrivals, func(a, b int) int { return int(p.Workloads[a].At - p.Workloads[b].At) })
	return arrivals
}

// nextEvent is when a replay's next arrival (arrivals[next], if any) or end comes.
func (p schedPlan) nextEvent(arrivals []int, next int, ends endHeap) time.Duration {
	now := time.Duration(1<<63 - 1)
	if next < len(arrivals) {
		now = p.Workloads[arrivals[next]].At
	}
	if ends.Len() > 0 && ends[0].at < now {
		now = ends[0].at
	}
	return now
}
