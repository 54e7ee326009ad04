package quota

import (
	"container/heap"
	"time"
)

// timerHeap orders pods by a time (retry or release), tracking each pod's position.
type timerHeap struct {
	pods  []*podState
	at    func(*podState) time.Time
	index func(*podState) *int
}

var _ heap.Interface = (*timerHeap)(nil)

func (h *timerHeap) Len() int           { return len(h.pods) }
func (h *timerHeap) Less(i, j int) bool { return h.at(h.pods[i]).Before(h.at(h.pods[j])) }
func (h *timerHeap) Swap(i, j int) {
	h.pods[i], h.pods[j] = h.pods[j], h.pods[i]
	*h.index(h.pods[i]) = i
	*h.index(h.pods[j]) = j
}
func (h *timerHeap) Push(x any) {
	p := x.(*podState)
	*h.index(p) = len(h.pods)
	h.pods = append(h.pods, p)
}
func (h *timerHeap) Pop() any {
	old := h.pods
	p := old[len(old)-1]
	old[len(old)-1] = nil
	h.pods = old[:len(old)-1]
	*h.index(p) = -1
	return p
}

// set adds p or moves it to its new time.
func (h *timerHeap) set(p *podState) {
	if i := *h.index(p); i >= 0 {
		heap.Fix(h, i)
		return
	}
	heap.Push(h, p)
}

func (h *timerHeap) remove(p *podState) {
	if i := *h.index(p); i >= 0 {
		heap.Remove(h, i)
	}
}

func (h *timerHeap) min() *podState {
	if len(h.pods) == 0 {
		return nil
	}
	return h.pods[0]
}
