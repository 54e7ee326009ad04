package quota

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The parts of a CompositePodGroup's gang (ResolvePodGroup): the group keeps, for every
// PodGroup and CompositePodGroup below its root, how close it is to complete, as
// members come, go and are gated or admitted, so that asking whether the gang is
// complete (groupPark, on every change to a member) costs nothing. Which members its
// first admission takes is worked out once per evaluation (completeUnit).

// partKey is the key of the part at the end of path: the names along it. A name
// holds no "|", so two paths never share a key.
func partKey(parent string, name string) string {
	if parent == "" {
		return name
	}
	return parent + "|" + name
}

// joinParts records p's path in the group's parts, creating the parts it is the first
// to name.
func (g *group) joinParts(p *podState) {
	if g.parts == nil {
		g.parts = map[string]*groupPart{}
		g.partsOf = map[*podState][]partRef{}
	}
	refs := make([]partRef, 0, len(p.pod.GroupParts))
	var parent *groupPart
	key := ""
	for i, gp := range p.pod.GroupParts {
		key = partKey(key, gp.Name)
		need := max(gp.Need, 1)
		part := g.parts[key]
		if part == nil {
			part = &groupPart{key: key, name: gp.Name, parent: parent, depth: i, needs: map[int]int{}, need: need}
			g.parts[key] = part
		}
		part.members++
		part.needs[need]++
		if need > part.need {
			part.need = need
			g.recheck(part)
		}
		refs = append(refs, partRef{part: part, need: need})
		parent = part
	}
	g.partsOf[p] = refs
	for _, r := range refs {
		g.move(r.part) // started, should p not be gated
	}
}

// leaveParts takes p's path out of the group's parts, dropping those no member names
// any more. p's record is gone already (it counts in no part).
func (g *group) leaveParts(p *podState, refs []partRef) {
	delete(g.partsOf, p)
	for i := len(refs) - 1; i >= 0; i-- {
		part, need := refs[i].part, refs[i].need
		part.members--
		g.move(part)
		if part.members == 0 {
			// Nothing waits below it, so it counts nothing and is not complete.
			delete(g.parts, part.key)
			continue
		}
		if dropCounted(part.needs, need, &part.need) {
			g.recheck(part)
		}
	}
}

// recheck brings part's completeness up to date after its count or need changed,
// and its parent's after that, up to the root.
func (g *group) recheck(part *groupPart) {
	for part != nil {
		complete := part.count >= part.need
		if complete == part.complete {
			return
		}
		part.complete = complete
		g.move(part)
		d := 1
		if !complete {
			d = -1
		}
		if part.parent == nil {
			g.rootCount += d
			return
		}
		part.parent.count += d
		part = part.parent
	}
}

// completeUnit returns which of cands (gated members, none backing off or parked) a
// CompositePodGroup's gang may admit now (unit), and the others (rest). A part may go
// when it already runs (a member below it is admitted or running) or is complete
// among cands; a member may go when every part on its path may. Until the gang has
// started, its root must be complete among cands too, or none goes. Only the parts on
// the paths of cands are weighed: a part with none below it goes only if it runs, and
// then so does every part above it. It costs O(cands × depth), once per evaluation.
func (g *group) completeUnit(cands []*podState) (unit, rest []*podState) {
	count := map[*groupPart]int{} // a PodGroup's cands; a part's children that go
	seen := map[*groupPart]bool{}
	var parts []*groupPart
	for _, m := range cands {
		refs := g.partsOf[m]
		if len(refs) == 0 {
			continue
		}
		count[refs[len(refs)-1].part]++
		for _, r := range refs {
			if !seen[r.part] {
				seen[r.part] = true
				parts = append(parts, r.part)
			}
		}
	}
	// Children before their parents.
	slices.SortFunc(parts, func(a, b *groupPart) int {
		if a.depth != b.depth {
			return b.depth - a.depth
		}
		return cmp.Compare(a.key, b.key)
	})
	goes := map[*groupPart]bool{}
	root := 0
	for _, part := range parts {
		if started := part.members > part.waiting; !started && count[part] < part.need {
			continue
		}
		goes[part] = true
		if part.parent == nil {
			root++
		} else {
			count[part.parent]++
		}
	}
	if !g.started() && root < g.size {
		return nil, cands
	}
	for _, m := range cands {
		ok := true
		for _, r := range g.partsOf[m] {
			ok = ok && goes[r.part]
		}
		if ok {
			unit = append(unit, m)
		} else {
			rest = append(rest, m)
		}
	}
	return unit, rest
}

// countWaiting adds d to the waiting members of leaf and the parts above it, m being
// the member that comes (+1) or goes (-1).
func (g *group) countWaiting(leaf *groupPart, m *podState, d int) {
	for part := leaf; part != nil; part = part.parent {
		part.waiting += d
		if d > 0 {
			if part.below == nil {
				part.below = map[*podState]struct{}{}
			}
			part.below[m] = struct{}{}
		} else {
			delete(part.below, m)
		}
		g.move(part)
	}
}

// move brings part.goes up to date, noting when its members may have to be placed
// again.
func (g *group) move(part *groupPart) {
	goes := part.complete || part.members > part.waiting
	if goes != part.goes {
		part.goes = goes
		if g.moved == nil {
			g.moved = map[*groupPart]struct{}{}
		}
		g.moved[part] = struct{}{}
	}
}

// movedMembers returns the gated members below the parts whose goes is not what it
// was when their members were last placed, by UID, and notes them placed.
func (g *group) movedMembers() []*podState {
	var out []*podState
	seen := map[*podState]bool{}
	for part := range g.moved {
		if part.goes == part.placedGoes {
			continue
		}
		part.placedGoes = part.goes
		for m := range part.below {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	clear(g.moved)
	slices.SortFunc(out, compareUIDs)
	return out
}

// placedParts notes every part placed as it goes now: all the members were just
// placed.
func (g *group) placedParts() {
	for _, part := range g.parts {
		part.placedGoes = part.goes
	}
	clear(g.moved)
}

// partPark is why a gated member of a CompositePodGroup's gang waits for its part of
// the gang: the first part on its path that does not go (nil when all of them go).
func (g *group) partPark(p *podState) *waitInfo {
	if part := g.stalledPart(p); part != nil {
		return &waitInfo{code: CodeGroupPartIncomplete, detail: partMessage(part, true)}
	}
	return nil
}

func (g *group) stalledPart(p *podState) *groupPart {
	for _, r := range g.partsOf[p] {
		if !r.part.goes {
			return r.part
		}
	}
	return nil
}

// partMessage says how far a part is from complete; lasting, without the counts that
// change while it waits.
func partMessage(part *groupPart, lasting bool) string {
	what := "child groups it needs complete"
	if strings.HasPrefix(part.name, PodGroupPrefix) {
		what = "pods its gang needs ready"
	}
	if lasting {
		return fmt.Sprintf("%s: waiting for the %d %s", part.name, part.need, what)
	}
	return fmt.Sprintf("%s: %d of the %d %s", part.name, part.count, part.need, what)
}

// partWaitMessage is partPark's message for p, with the counts of now; "" when every
// part of its path goes.
func (g *group) partWaitMessage(p *podState) string {
	if part := g.stalledPart(p); part != nil {
		return partMessage(part, false)
	}
	return ""
}

// goersUncovered reports whether, in a CompositePodGroup's gang whose gated members are
// covered in part, no budget covers any of the members that may go now (in parts that
// go) while one does cover a member that may not: no budget's queue then holds a
// member that may go (the covered ones wait parked by their parts), so, as for a group
// no budget covers, settleGroup admits the parts that go at once. A pass over the
// gated members, made only for a gang covered in part.
func (g *group) goersUncovered() bool {
	if g.parts == nil || g.covered == 0 || g.covered == g.waiting.Len() {
		return false
	}
	goers := 0
	for _, r := range g.waiting.Items() {
		if g.stalledPart(r.pod) != nil {
			continue
		}
		if len(r.pod.cover) > 0 {
			return false
		}
		goers++
	}
	return goers > 0
}

// mayGo returns the members of waiting that a part of theirs does not hold
// (partPark): what the group could admit together, and so what must fit.
func (g *group) mayGo(waiting []*podState) []*podState {
	if g.parts == nil {
		return waiting
	}
	out := make([]*podState, 0, len(waiting))
	for _, m := range waiting {
		if g.stalledPart(m) == nil {
			out = append(out, m)
		}
	}
	return out
}
