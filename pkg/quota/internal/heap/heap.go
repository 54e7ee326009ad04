// Package heap is the one binary heap of quotagate's admission core: generic over the
// element, ordered by a less function, and (when asked) keeping each element's position
// in the element itself, so that an element can be removed or moved to its new place in
// O(log n) without a search, as kube-scheduler's backend/heap does with a map. The core
// keeps its queues, its dirty budgets, a group's gated members and its timers in it.
//
// It makes the same moves as container/heap (the same comparisons, the same layout of
// the slice), so replacing one with the other changes no order, ties included; it only
// writes each element's position once per move instead of on every swap, and needs no
// interface boxing.
package heap

// Heap is a min-heap of T under less. The zero value is not usable: build one with New.
// It is not safe for concurrent use.
type Heap[T any] struct {
	items []T
	less  func(a, b T) bool
	index func(T) *int // where an element keeps its position; nil: untracked
}

// New returns an empty heap ordered by less (less(a, b): a comes out before b). index,
// when not nil, returns where an element keeps its position in the heap: the heap writes
// it on every move, and -1 when the element leaves. Remove and Fix need it. An element
// must be in at most one heap that tracks positions in the same place.
func New[T any](less func(a, b T) bool, index func(T) *int) Heap[T] {
	return Heap[T]{less: less, index: index}
}

// From returns a heap of items, ordered by less, without position tracking: for a
// one-off pass in order over elements that keep their positions for another heap. The
// heap takes items over.
func From[T any](items []T, less func(a, b T) bool) Heap[T] {
	h := Heap[T]{items: items, less: less}
	for i := len(items)/2 - 1; i >= 0; i-- {
		h.down(i, len(items))
	}
	return h
}

// Len is the number of elements.
func (h *Heap[T]) Len() int { return len(h.items) }

// Items returns the elements in heap order (the first is the least; the rest in no
// order a caller may rely on). The caller must not change the slice, and must not
// change the heap while it reads.
func (h *Heap[T]) Items() []T { return h.items }

// Peek returns the least element, and false when the heap is empty.
func (h *Heap[T]) Peek() (T, bool) {
	if len(h.items) == 0 {
		var zero T
		return zero, false
	}
	return h.items[0], true
}

// Push adds x.
func (h *Heap[T]) Push(x T) {
	h.items = append(h.items, x)
	h.up(len(h.items)-1, x)
}

// Pop removes and returns the least element. The heap must not be empty.
func (h *Heap[T]) Pop() T {
	return h.removeAt(0)
}

// Remove takes x out of the heap; it does nothing when x is not in it. It needs index.
func (h *Heap[T]) Remove(x T) {
	if i := *h.index(x); i >= 0 {
		h.removeAt(i)
	}
}

// Fix moves x to its place after its order changed, or adds it when it is not in the
// heap. It needs index.
func (h *Heap[T]) Fix(x T) {
	i := *h.index(x)
	if i < 0 {
		h.Push(x)
		return
	}
	if !h.down(i, len(h.items)) {
		h.up(i, x)
	}
}

// removeAt takes out the element at i, as container/heap.Remove does: the last element
// takes its place and moves down, or else up.
func (h *Heap[T]) removeAt(i int) T {
	n := len(h.items) - 1
	x := h.items[i]
	last := h.items[n]
	var zero T
	h.items[n] = zero // hold no element beyond its stay
	h.items = h.items[:n]
	if i != n {
		h.items[i] = last
		if !h.down(i, n) {
			h.up(i, last)
		}
	}
	h.setIndex(x, -1)
	return x
}

// up moves x, at j, towards the root while it is less than its parent.
func (h *Heap[T]) up(j int, x T) {
	for j > 0 {
		i := (j - 1) / 2
		p := h.items[i]
		if !h.less(x, p) {
			break
		}
		h.items[j] = p
		h.setIndex(p, j)
		j = i
	}
	h.items[j] = x
	h.setIndex(x, j)
}

// down moves the element at i0 towards the leaves of the first n elements while a
// child is less than it, and reports whether it moved.
func (h *Heap[T]) down(i0, n int) bool {
	x := h.items[i0]
	i := i0
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 { // j1 < 0 after int overflow
			break
		}
		j := j1
		if j2 := j1 + 1; j2 < n && h.less(h.items[j2], h.items[j1]) {
			j = j2
		}
		c := h.items[j]
		if !h.less(c, x) {
			break
		}
		h.items[i] = c
		h.setIndex(c, i)
		i = j
	}
	h.items[i] = x
	h.setIndex(x, i)
	return i > i0
}

func (h *Heap[T]) setIndex(x T, i int) {
	if h.index != nil {
		*h.index(x) = i
	}
}
