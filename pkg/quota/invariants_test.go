package quota

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// checkInvariants verifies the core's internal bookkeeping, for the randomized test:
// every gated pod is in exactly one queue of each budget that covers it, every charge
// is recorded on both sides, and the sums match.
func (q *AdmissionQueue) checkInvariants() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	used := map[*budget]corev1.ResourceList{}
	claimPods := map[*budget]map[string]int{} // per budget, the charged pods of each claim
	pending := map[*budget]corev1.ResourceList{}
	entries := map[*budget]int{}
	inadm := 0
	for uid, p := range q.pods.byUID {
		if p.pod.UID != uid {
			return fmt.Errorf("pod %s filed under %s", p.pod.UID, uid)
		}
		switch p.phase {
		case phaseWaiting:
			if len(p.charge.to) > 0 {
				return fmt.Errorf("waiting pod %s is charged", uid)
			}
			if len(p.queued.list) != 0 && len(p.queued.list) != len(p.cover) {
				return fmt.Errorf("pod %s has %d entries for %d budgets", uid, len(p.queued.list), len(p.cover))
			}
			if len(p.queued.list) == 0 && len(p.cover) > 0 {
				return fmt.Errorf("covered gated pod %s is in no queue", uid)
			}
			for i, e := range p.queued.list {
				if e.pod != p || e.budget != p.cover[i] {
					return fmt.Errorf("pod %s: entry %d points elsewhere", uid, i)
				}
				if q.topology.Lookup(e.budget.key) != e.budget {
					return fmt.Errorf("pod %s queued in deleted budget %v", uid, e.budget.key)
				}
				switch e.kind {
				case queueParked:
					if !p.parked {
						return fmt.Errorf("pod %s parked in %v but not parked", uid, e.budget.key)
					}
					if _, ok := e.budget.queues.parked[e]; !ok {
						return fmt.Errorf("pod %s not in %v's parked set", uid, e.budget.key)
					}
				case queueActive, queueBackoff, queueInadmissible:
					if p.parked {
						return fmt.Errorf("parked pod %s is in %s of %v", uid, e.kind.name(), e.budget.key)
					}
					if (e.kind == queueBackoff) != p.inBackoff {
						return fmt.Errorf("pod %s: backoff %v but in %s of %v", uid, p.inBackoff, e.kind.name(), e.budget.key)
					}
					h := e.budget.queues.heapOf(e.kind).Items()
					if e.index < 0 || e.index >= len(h) || h[e.index] != e {
						return fmt.Errorf("pod %s: bad heap index in %s of %v", uid, e.kind.name(), e.budget.key)
					}
					if e.kind == queueInadmissible {
						inadm++
					}
				default:
					return fmt.Errorf("pod %s has an entry in no queue of %v", uid, e.budget.key)
				}
				entries[e.budget]++
				if pending[e.budget] == nil {
					pending[e.budget] = corev1.ResourceList{}
				}
				addTo(pending[e.budget], listOf(p.usage()))
			}
			if p.inBackoff && p.attempt.backoffIndex < 0 {
				return fmt.Errorf("pod %s backs off without a timer", uid)
			}
		default:
			if len(p.queued.list) > 0 {
				return fmt.Errorf("admitted pod %s still queued", uid)
			}
			if p.parked || p.inBackoff || !reflect.DeepEqual(p.wait, waitInfo{}) {
				return fmt.Errorf("admitted pod %s still waits: parked %v, backoff %v, wait %+v", uid, p.parked, p.inBackoff, p.wait)
			}
			for _, b := range p.charge.to {
				if c, _ := b.ledger.ChargedPod(uid); c != p {
					return fmt.Errorf("pod %s charged to %v, which does not list it", uid, b.key)
				}
				if used[b] == nil {
					used[b] = corev1.ResourceList{}
				}
				addTo(used[b], listOf(p.charge.usage))
				for _, c := range p.charge.claims { // charged once, below
					subtractFrom(used[b], listOf(c.Usage))
					if claimPods[b] == nil {
						claimPods[b] = map[string]int{}
					}
					claimPods[b][c.Key]++
				}
			}
		}
		if g := p.group; g != nil && g.members[uid] != p {
			return fmt.Errorf("pod %s not a member of its group", uid)
		}
	}
	if inadm != q.agenda.nInadm {
		return fmt.Errorf("%d inadmissible entries, counter says %d", inadm, q.agenda.nInadm)
	}
	for _, b := range q.topology.Sorted() {
		key := b.key
		if n := b.queues.gated(); n != entries[b] {
			return fmt.Errorf("budget %v holds %d entries, pods point at %d", key, n, entries[b])
		}
		for p := range b.ledger.Charged() {
			if uid := p.pod.UID; q.pods.get(uid) != p || p.phase == phaseWaiting {
				return fmt.Errorf("budget %v charges pod %s that is not admitted", key, uid)
			}
		}
		charged := maps.Collect(b.ledger.ChargedClaims())
		if len(claimPods[b]) != len(charged) {
			return fmt.Errorf("budget %v charges claims %v, its pods use %v", key, charged, claimPods[b])
		}
		for k, usage := range charged {
			if n := b.ledger.ClaimUsers(k); claimPods[b][k] != n {
				return fmt.Errorf("budget %v counts %d pods of claim %s, %d charged pods use it", key, n, k, claimPods[b][k])
			}
			if used[b] == nil {
				used[b] = corev1.ResourceList{}
			}
			addTo(used[b], listOf(usage))
		}
		if !sameAmounts(used[b], listOf(b.ledger.Used())) {
			return fmt.Errorf("budget %v used %v differs from its charges %v", key, b.ledger.Used(), used[b])
		}
		if !sameAmounts(pending[b], listOf(b.ledger.Pending())) {
			return fmt.Errorf("budget %v pending %v differs from its queues %v", key, b.ledger.Pending(), pending[b])
		}
		if dirty := q.agenda.dirty.Items(); b.dirtyIndex >= 0 && (b.dirtyIndex >= len(dirty) || dirty[b.dirtyIndex] != b) {
			return fmt.Errorf("budget %v: bad dirty index", key)
		}
	}
	return nil
}

// sameAmounts compares resource lists by value, a missing entry counting as zero.
func sameAmounts(a, b corev1.ResourceList) bool {
	for name, q := range a {
		if q.Cmp(b[name]) != 0 {
			return false
		}
	}
	for name, q := range b {
		if q.Cmp(a[name]) != 0 {
			return false
		}
	}
	return true
}

func (q *AdmissionQueue) chargedNames(k BudgetKey) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	if b := q.topology.Lookup(k); b != nil {
		for p := range b.ledger.Charged() {
			out = append(out, p.pod.Name)
		}
	}
	slices.Sort(out)
	return out
}
