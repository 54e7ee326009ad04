package estimate

// ordered is what minHeap orders: a T that says whether it comes before another.
type ordered[T any] interface{ before(T) bool }

// What the simulations keep in a minHeap.
var (
	_ ordered[podEnd] = podEnd{}
	_ ordered[coming] = coming{}
)

// minHeap is a container/heap of T, the one that comes before every other first: a
// simulation's pods' ends, and its streams' next moments.
type minHeap[T ordered[T]] struct{ items []T }

func (h *minHeap[T]) Len() int           { return len(h.items) }
func (h *minHeap[T]) Less(i, j int) bool { return h.items[i].before(h.items[j]) }
func (h *minHeap[T]) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *minHeap[T]) Push(x any)         { h.items = append(h.items, x.(T)) }
func (h *minHeap[T]) Pop() any {
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return last
}
