package quota

import (
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestConcurrentUse: informer handlers, workers and readers may call the core at once
// (run with -race). Every pod ends up admitted exactly once.
func TestConcurrentUse(t *testing.T) {
	q, _ := newTestQueue()
	q.UpsertBudget(makeBudget("team-a", "b").Hard("pods=1000").Obj())
	const writers, perWriter = 4, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				q.UpsertPod(makePod(fmt.Sprintf("w%d-%d", w, i)).Created(i).Pod())
			}
		})
	}
	admitted := map[types.UID]int{}
	var mu sync.Mutex
	stop := make(chan struct{})
	var workers sync.WaitGroup
	for range 2 {
		workers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, a := range q.Admit() {
					mu.Lock()
					admitted[a.Pod.UID]++
					mu.Unlock()
					q.Done(a.Pod.UID, Ungated, "")
				}
				q.Reader().Snapshot()
				q.DirtyStatuses()
				q.NextWakeup()
			}
		})
	}
	wg.Wait()
	close(stop)
	workers.Wait()
	for _, a := range q.Admit() {
		admitted[a.Pod.UID]++
	}
	if len(admitted) != writers*perWriter {
		t.Errorf("admitted %d pods, want %d", len(admitted), writers*perWriter)
	}
	for uid, n := range admitted {
		if n != 1 {
			t.Errorf("pod %s admitted %d times", uid, n)
		}
	}
}
