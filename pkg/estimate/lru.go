package estimate

import (
	"container/list"
	"iter"
)

// lru keeps at most max values by key, the one recorded least recently going first
// when one more is added: what a Learner keeps of each workload's runs, and Arrivals of
// each stream's creations. Its caller locks it.
type lru[K comparable, V any] struct {
	max   int
	items map[K]*list.Element // each Value an *entry[K, V]
	order list.List           // front: recorded most recently
}

type entry[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, items: map[K]*list.Element{}}
}

// get returns k's value, without making it recent (a read is not a record).
func (c *lru[K, V]) get(k K) (*V, bool) {
	e, ok := c.items[k]
	if !ok {
		return nil, false
	}
	return &e.Value.(*entry[K, V]).val, true
}

// record returns k's value, made the most recent: a new zero one when k has none, the
// least recent key dropped when that makes more than max.
func (c *lru[K, V]) record(k K) *V {
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return &e.Value.(*entry[K, V]).val
	}
	if c.order.Len() >= c.max {
		oldest := c.order.Back()
		delete(c.items, oldest.Value.(*entry[K, V]).key)
		c.order.Remove(oldest)
	}
	e := c.order.PushFront(&entry[K, V]{key: k})
	c.items[k] = e
	return &e.Value.(*entry[K, V]).val
}

// len is how many keys it keeps.
func (c *lru[K, V]) len() int { return c.order.Len() }

// all yields the keys and their values, the most recently recorded first.
func (c *lru[K, V]) all() iter.Seq2[K, *V] {
	return func(yield func(K, *V) bool) {
		for e := c.order.Front(); e != nil; e = e.Next() {
			en := e.Value.(*entry[K, V])
			if !yield(en.key, &en.val) {
				return
			}
		}
	}
}
