package quota

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
	"github.com/quotagate/quotagate/pkg/quota/internal/heap"
	"github.com/quotagate/quotagate/pkg/quota/internal/order"
)

// Groups (docs/budgets.md, "Groups: all or nothing"). Pods with the same
// quotagate.io/group label in one namespace are admitted all together once group-size
// of them are gated and their sum fits every budget that covers any of them. Nothing is
// reserved for a group until the whole group fits, so two half-fitting groups cannot
// deadlock each other.
//
// A group is "started" once any member is admitted (or was running when first seen,
// say after a manager restart): its remaining gated members are then admitted together
// as soon as they fit, without waiting for group-size again; they belong to a group
// that already runs. When members disagree on group-size, the largest wins.
//
// Cost. A group can have thousands of members, and every change to one of them is
// handled under the core's only lock, so a change must not cost a pass over the group.
// The group keeps what its decisions need up to date as members change (the gated
// members in a heap by their own order key, how many give each group-size, what the
// gated members would charge each budget), and remembers how its gated members are
// placed (settleMember). A change that leaves that placement as it is (the usual case:
// one more member of a group still incomplete) places just the member that changed; a
// change that alters it (the group becomes complete, never fits, starts, or gets a new
// best member) re-places every gated member once (settleGroup). So forming a group of n
// costs O(n log n), not O(n² log n).

type groupKey struct{ namespace, name string }

type group struct {
	key     groupKey
	members map[types.UID]*podState // non-terminal members
	sizes   map[int]int             // how many members give each group-size
	sizeOf  map[*podState]int       // the group-size each member gave when it joined
	size    int                     // the largest group-size a member gives

	// The gated members, by their own order key (best first), with what each adds to
	// the budgets that cover it: updated by sync whenever a member changes.
	waiting heap.Heap[*memberRec] // memberLess
	recs    map[*podState]*memberRec
	charges map[*budget]*budgetCharge
	covered int // gated members that some budget covers

	// order is the place in admission order that every gated member shares: the own
	// key of the best gated member when they were last placed. It changes only while
	// none of them is in a queue heap, since the heaps compare members by it.
	order  order.Key
	placed placement

	// The parts of a CompositePodGroup's gang (ResolvePodGroup), by the path to them
	// (partKey); nil for any other group. partsOf holds the parts each member joined
	// with and the need it gave each, and rootCount the root's complete children.
	parts     map[string]*groupPart
	partsOf   map[*podState][]partRef
	rootCount int
	// moved are the parts whose goes may differ from how their members were last
	// placed (groupPart.placedGoes): their members are placed again (movedMembers).
	moved map[*groupPart]struct{}
}

// groupPart is a child PodGroup or CompositePodGroup somewhere below a
// CompositePodGroup's root. Its count is kept as members change: the gated members
// of a PodGroup, the complete children of a CompositePodGroup; it is complete once
// count reaches need, which its parent (or the root) counts.
type groupPart struct {
	key      string
	name     string     // its GroupPart.Name
	parent   *groupPart // nil: a child of the root
	depth    int
	members  int         // members whose path goes through it
	waiting  int         // of those, the gated members the group records (recs)
	needs    map[int]int // how many members give each need
	need     int         // the largest need a member gives
	count    int
	complete bool
	// goes: complete, or started (a member below it is admitted or running); the
	// members below a part that does not go are parked (partPark). placedGoes is what
	// it was when they were last placed, and below the gated members under it.
	goes, placedGoes bool
	below            map[*podState]struct{}
}

type partRef struct {
	part *groupPart
	need int
}

// placement is how a group's gated members are placed, so that a change to one member
// that keeps it can place just that member.
type placement uint8

const (
	// placedAnyhow: nothing that a single member's change can keep (no gated member,
	// never fits, admitted without quota, held): the next change re-places them all.
	placedAnyhow placement = iota
	// placedIncomplete: all parked because the group has fewer members than its size.
	placedIncomplete
	// placedQueued: all in the queues (active, backoff or inadmissible) under g.order.
	placedQueued
)

// memberRec is one gated member as the group accounts it: its own key and what it
// adds to each budget that covered it when it was recorded.
type memberRec struct {
	pod   *podState
	key   order.Key
	cover []*budget
	usage amount.List
	unset []UnsetResource
	index int // in group.waiting
	// leaf is the member's own PodGroup when the group is a CompositePodGroup's gang.
	leaf *groupPart
}

type budgetCharge struct {
	members int
	sum     amount.List
	// unset counts, by name, the members that leave it unset (UnsetResources).
	unset map[corev1.ResourceName]int
}

func newGroup(k groupKey) *group {
	return &group{
		key:     k,
		members: map[types.UID]*podState{},
		sizes:   map[int]int{},
		sizeOf:  map[*podState]int{},
		recs:    map[*podState]*memberRec{},
		charges: map[*budget]*budgetCharge{},
		waiting: heap.New(memberLess, func(r *memberRec) *int { return &r.index }),
	}
}

// groupIndex holds the groups with at least one non-terminal member, by key.
type groupIndex map[groupKey]*group

// groupable reports whether pod belongs to the group its labels name: it names a usable
// one, and, gated, it can be admitted at all (a claim that does not exist yet or a value
// beyond counting holds it with its own reason). A running member belongs whatever it
// carries: the group is preempted whole, that member with it.
func groupable(pod *Pod) bool {
	if pod.Group == "" || pod.GroupError != "" {
		return false
	}
	return !pod.Gated || (pod.ClaimsError == "" && pod.Uncountable == "")
}

// join adds p to the group its labels name, creating the group, unless it does not
// belong to one (groupable).
func (gi groupIndex) join(p *podState) {
	if !groupable(&p.pod) {
		return
	}
	k := groupKey{namespace: p.pod.Namespace, name: p.pod.Group}
	g := gi[k]
	if g == nil {
		g = newGroup(k)
		gi[k] = g
	}
	g.members[p.pod.UID] = p
	p.group = g
	g.sizeOf[p] = p.pod.GroupSize
	g.sizes[p.pod.GroupSize]++
	g.size = max(g.size, p.pod.GroupSize)
	if len(p.pod.GroupParts) > 0 {
		g.joinParts(p)
	}
}

// leave takes p out of its group. It returns the group when members are left behind
// (their placement may change), nil when p had no group or was its last member (the
// group is dropped).
func (gi groupIndex) leave(p *podState) *group {
	g := p.group
	if g == nil {
		return nil
	}
	delete(g.members, p.pod.UID)
	p.group = nil
	if r := g.recs[p]; r != nil {
		g.unrecord(r) // before its parts are let go: the counts along its path drop
	}
	if refs := g.partsOf[p]; refs != nil {
		g.leaveParts(p, refs)
	}
	// The size it gave when it joined: its spec may have changed since.
	size := g.sizeOf[p]
	delete(g.sizeOf, p)
	dropCounted(g.sizes, size, &g.size)
	if len(g.members) == 0 {
		delete(gi, g.key)
		return nil
	}
	return g
}

// dropCounted takes one v out of counts (how many give each value), whose largest
// value is *largest, and reports whether *largest changed.
func dropCounted(counts map[int]int, v int, largest *int) bool {
	if counts[v]--; counts[v] > 0 {
		return false
	}
	delete(counts, v)
	if v != *largest {
		return false
	}
	*largest = 0
	for n := range counts {
		*largest = max(*largest, n)
	}
	return true
}

// started reports whether some member is admitted or running.
func (g *group) started() bool { return len(g.recs) < len(g.members) }

// waitingByUID returns the gated members, by UID (a deterministic order for placing
// and admitting them).
func (g *group) waitingByUID() []*podState {
	out := make([]*podState, g.waiting.Len())
	for i, r := range g.waiting.Items() {
		out[i] = r.pod
	}
	slices.SortFunc(out, compareUIDs)
	return out
}

// best is the own key of the best gated member (the group's place in admission order).
func (g *group) best() (order.Key, bool) {
	r, ok := g.waiting.Peek()
	if !ok {
		return order.Key{}, false
	}
	return r.key, true
}

// sync brings the group's accounting of p up to date after p changed: p is recorded
// as a gated member while it is a gated member of g, with its current key, coverage
// and usage.
func (g *group) sync(p *podState) {
	if r := g.recs[p]; r != nil {
		g.unrecord(r)
	}
	if p.group != g || p.phase != phaseWaiting || g.members[p.pod.UID] != p {
		return
	}
	r := &memberRec{pod: p, key: ownKey(&p.pod), cover: p.cover, usage: p.usage(), unset: p.pod.Unset}
	g.recs[p] = r
	g.waiting.Push(r)
	g.account(r, +1)
	if refs := g.partsOf[p]; len(refs) > 0 {
		r.leaf = refs[len(refs)-1].part
		r.leaf.count++
		g.recheck(r.leaf)
		g.countWaiting(r.leaf, p, +1)
	}
}

// unrecord takes a gated member's record out of the group's accounting.
func (g *group) unrecord(r *memberRec) {
	g.waiting.Remove(r)
	delete(g.recs, r.pod)
	g.account(r, -1)
	if r.leaf != nil {
		r.leaf.count--
		g.recheck(r.leaf)
		g.countWaiting(r.leaf, r.pod, -1)
	}
}

// complete reports whether the gated members are enough for the group's first
// admission: group-size of them, or, for a CompositePodGroup's gang, minGroupCount
// complete children of its root.
func (g *group) complete() bool {
	if g.parts != nil {
		return g.rootCount >= g.size
	}
	return g.waiting.Len() >= g.size
}

// have is how far the group is from complete: its members, or its root's complete
// children.
func (g *group) have() int {
	if g.parts != nil {
		return g.rootCount
	}
	return len(g.members)
}

func (g *group) account(r *memberRec, sign int) {
	if len(r.cover) > 0 {
		g.covered += sign
	}
	for _, b := range r.cover {
		c := g.charges[b]
		if c == nil {
			c = &budgetCharge{sum: amount.List{}}
			g.charges[b] = c
		}
		c.members += sign
		if sign > 0 {
			c.sum.Add(r.usage)
		} else {
			c.sum.Sub(r.usage)
		}
		countUnset(c, r.unset, sign)
		if c.members == 0 {
			delete(g.charges, b)
		}
	}
}

// mayNeverFit reports whether the gated members' sum exceeds the hard of a budget that
// covers some of them, or a member leaves unset what such a budget tracks. It is a
// quick check on the running sums; settleGroup computes the reason itself.
func (g *group) mayNeverFit() bool {
	family := false
	for b, c := range g.charges {
		if _, over := b.ledger.NeverFits(c.sum); over || tracksAnyUnset(b, c.unset) {
			return true
		}
		family = family || b.borrowingParent() != nil
	}
	if !family {
		return false
	}
	cover := make([]*budget, 0, len(g.charges))
	for b := range g.charges {
		cover = append(cover, b)
	}
	_, never := familyNeverFits(cover, func(b *budget) amount.List { return g.charges[b].sum })
	return never
}

// countUnset adds (sign +1) or takes away (-1) a member's unset values in c's counts.
func countUnset(c *budgetCharge, unset []UnsetResource, sign int) {
	for _, u := range unset {
		if c.unset == nil {
			c.unset = map[corev1.ResourceName]int{}
		}
		if c.unset[u.Name] += sign; c.unset[u.Name] == 0 {
			delete(c.unset, u.Name)
		}
	}
}

// memberLess orders a group's gated members by their own order key, then UID.
func memberLess(a, b *memberRec) bool {
	if c := a.key.Compare(&b.key); c != 0 {
		return c < 0
	}
	return compareUIDs(a.pod, b.pod) < 0
}
