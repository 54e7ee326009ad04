package heap

import (
	stdheap "container/heap"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// item is an element that keeps its own position, as the core's elements do.
type item struct {
	key, id int // ordered by key, then id: ties in key are real ties for the heap
	index   int
}

func byKey(a, b *item) bool { return a.key < b.key }
func indexOf(x *item) *int  { return &x.index }

func keys(items []*item) []int {
	out := make([]int, len(items))
	for i, x := range items {
		out[i] = x.key
	}
	return out
}

// drain pops every element and returns their keys in the order they came out.
func drain(h *Heap[*item]) []int {
	var out []int
	for h.Len() > 0 {
		out = append(out, h.Pop().key)
	}
	return out
}

func TestHeap(t *testing.T) {
	type op struct {
		do  string // push, remove, fix
		key int    // push: the new element's key; fix: its new key
		of  int    // remove and fix: which pushed element (0 first)
	}
	tests := map[string]struct {
		ops  []op
		want []int // the keys, in the order Pop returns them
	}{
		"empty": {},
		"pops in order": {
			ops:  []op{{do: "push", key: 3}, {do: "push", key: 1}, {do: "push", key: 2}},
			want: []int{1, 2, 3},
		},
		"remove the least": {
			ops:  []op{{do: "push", key: 3}, {do: "push", key: 1}, {do: "push", key: 2}, {do: "remove", of: 1}},
			want: []int{2, 3},
		},
		"remove from the middle": {
			ops: []op{{do: "push", key: 5}, {do: "push", key: 1}, {do: "push", key: 4}, {do: "push", key: 2},
				{do: "push", key: 3}, {do: "remove", of: 2}, {do: "remove", of: 3}},
			want: []int{1, 3, 5},
		},
		"remove twice is once": {
			ops:  []op{{do: "push", key: 1}, {do: "push", key: 2}, {do: "remove", of: 0}, {do: "remove", of: 0}},
			want: []int{2},
		},
		"fix moves up": {
			ops:  []op{{do: "push", key: 1}, {do: "push", key: 2}, {do: "push", key: 3}, {do: "fix", of: 2, key: 0}},
			want: []int{0, 1, 2},
		},
		"fix moves down": {
			ops:  []op{{do: "push", key: 1}, {do: "push", key: 2}, {do: "push", key: 3}, {do: "fix", of: 0, key: 9}},
			want: []int{2, 3, 9},
		},
		"fix adds what is out": {
			ops:  []op{{do: "push", key: 1}, {do: "push", key: 2}, {do: "remove", of: 0}, {do: "fix", of: 0, key: 7}},
			want: []int{2, 7},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := New(byKey, indexOf)
			var pushed []*item
			for _, o := range tc.ops {
				switch o.do {
				case "push":
					x := &item{key: o.key, id: len(pushed), index: -1}
					pushed = append(pushed, x)
					h.Push(x)
				case "remove":
					h.Remove(pushed[o.of])
				case "fix":
					pushed[o.of].key = o.key
					h.Fix(pushed[o.of])
				}
			}
			if diff := cmp.Diff(tc.want, drain(&h)); diff != "" {
				t.Errorf("popped keys (-want +got):\n%s", diff)
			}
			for _, x := range pushed {
				if x.index != -1 {
					t.Errorf("element %d keeps index %d after the heap emptied, want -1", x.id, x.index)
				}
			}
		})
	}
}

func TestPeek(t *testing.T) {
	h := New(byKey, indexOf)
	if x, ok := h.Peek(); ok {
		t.Fatalf("Peek on an empty heap = %v, true; want false", x)
	}
	h.Push(&item{key: 2, index: -1})
	h.Push(&item{key: 1, index: -1})
	if x, ok := h.Peek(); !ok || x.key != 1 {
		t.Errorf("Peek = %v, %v; want key 1", x, ok)
	}
	if h.Len() != 2 {
		t.Errorf("Len after Peek = %d, want 2: Peek takes nothing out", h.Len())
	}
}

func TestFromLeavesPositionsAlone(t *testing.T) {
	items := []*item{{key: 3, index: 7}, {key: 1, index: 8}, {key: 2, index: 9}}
	h := From(slices.Clone(items), byKey)
	if diff := cmp.Diff([]int{1, 2, 3}, drain(&h)); diff != "" {
		t.Errorf("popped keys (-want +got):\n%s", diff)
	}
	for i, x := range items {
		if x.index != 7+i {
			t.Errorf("element with key %d has index %d, want %d: From tracks no positions", x.key, x.index, 7+i)
		}
	}
}

// stdHeap is container/heap's heap over the same elements: the reference for layout.
type stdHeap []*item

func (h stdHeap) Len() int           { return len(h) }
func (h stdHeap) Less(i, j int) bool { return h[i].key < h[j].key }
func (h stdHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *stdHeap) Push(x any)        { *h = append(*h, x.(*item)) }
func (h *stdHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// check runs ops (pairs of bytes: an operation and an argument) on a Heap, on
// container/heap's heap of copies of the same elements, and on a sorted slice, and
// fails when the heap pops out of order, when its positions are wrong, or when its
// layout differs from container/heap's (so that replacing one by the other changes no
// order among ties).
func check(t *testing.T, ops []byte) {
	t.Helper()
	h := New(byKey, indexOf)
	var std stdHeap
	var sorted []*item // the elements in the heap, by key then id
	var all []*item    // every element pushed, in or out
	ids := 0
	compareItems := func(a, b *item) int {
		if a.key != b.key {
			return a.key - b.key
		}
		return a.id - b.id
	}
	stdIndex := func(x *item) int { return slices.IndexFunc(std, func(y *item) bool { return y.id == x.id }) }
	for k := 0; k+1 < len(ops); k += 2 {
		op, arg := ops[k]%4, int(ops[k+1])
		switch {
		case op == 0 || len(all) == 0: // push
			key := arg % 16 // few keys: many ties
			x := &item{key: key, id: ids, index: -1}
			ids++
			all = append(all, x)
			h.Push(x)
			stdheap.Push(&std, &item{key: key, id: x.id})
			sorted = append(sorted, x)
			slices.SortStableFunc(sorted, compareItems)
		case op == 1 && h.Len() > 0: // pop
			x := h.Pop()
			y := stdheap.Pop(&std).(*item)
			if x.id != y.id {
				t.Fatalf("Pop = element %d, container/heap pops %d", x.id, y.id)
			}
			if x.key != sorted[0].key {
				t.Fatalf("Pop = key %d, the least key is %d", x.key, sorted[0].key)
			}
			sorted = slices.DeleteFunc(sorted, func(y *item) bool { return y == x })
		case op == 2: // remove any element, in the heap or not
			x := all[arg%len(all)]
			h.Remove(x)
			if i := stdIndex(x); i >= 0 {
				stdheap.Remove(&std, i)
			}
			sorted = slices.DeleteFunc(sorted, func(y *item) bool { return y == x })
		case op == 3: // change the key of an element in the heap and fix it
			if len(sorted) == 0 {
				continue
			}
			x := sorted[arg%len(sorted)]
			x.key = (arg / 7) % 16
			h.Fix(x)
			i := stdIndex(x)
			std[i].key = x.key
			stdheap.Fix(&std, i)
			slices.SortStableFunc(sorted, compareItems)
		}
		if h.Len() != len(sorted) {
			t.Fatalf("Len = %d, want %d", h.Len(), len(sorted))
		}
		for i, x := range h.Items() {
			if x.index != i {
				t.Fatalf("element %d at %d says it is at %d", x.id, i, x.index)
			}
			if x.id != std[i].id {
				t.Fatalf("at %d: element %d, container/heap has %d there", i, x.id, std[i].id)
			}
		}
		for _, x := range all {
			if !slices.Contains(sorted, x) && x.index != -1 {
				t.Fatalf("element %d is out of the heap and says it is at %d", x.id, x.index)
			}
		}
	}
	got := drain(&h)
	if diff := cmp.Diff(keys(sorted), got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("drained keys (-sorted +heap):\n%s", diff)
	}
}

// TestMatchesSortedSlice is check over random operations.
func TestMatchesSortedSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		ops := make([]byte, 2*rng.IntN(200))
		for i := range ops {
			ops[i] = byte(rng.UintN(256))
		}
		check(t, ops)
	}
}

func FuzzHeap(f *testing.F) {
	f.Add([]byte{0, 3, 0, 1, 0, 2, 1, 0, 1, 0})
	f.Add([]byte{0, 5, 0, 5, 0, 5, 2, 1, 3, 40, 1, 0})
	f.Fuzz(func(t *testing.T, ops []byte) { check(t, ops) })
}
