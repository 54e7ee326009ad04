package quota

import "testing"

// The group index alone: members join and leave, the group's size is the largest any
// member gives, a member leaves with the size it joined with, and the last to leave
// drops the group.
func TestGroupIndex(t *testing.T) {
	gi := groupIndex{}
	pods := map[string]*podState{}
	podOf := func(name string, size int) *podState {
		p := &podState{pod: member(name, "train", size, 0).Pod()}
		pods[name] = p
		return p
	}
	key := groupKey{namespace: "team-a", name: "train"}
	for i, s := range []struct {
		join, leave string
		size        int // the group-size the joining pod gives
		wantSize    int // 0: no group
		wantMembers int
		wantLeft    bool // leave returns the group (members are left behind)
	}{
		{join: "a", size: 2, wantSize: 2, wantMembers: 1},
		{join: "b", size: 4, wantSize: 4, wantMembers: 2},
		{join: "c", size: 4, wantSize: 4, wantMembers: 3},
		{leave: "b", wantSize: 4, wantMembers: 2, wantLeft: true}, // c still gives 4
		{leave: "c", wantSize: 2, wantMembers: 1, wantLeft: true}, // back to a's 2
		{leave: "a", wantSize: 0, wantMembers: 0},                 // the group is dropped
		{leave: "a", wantSize: 0, wantMembers: 0},                 // not a member: nothing
	} {
		if s.join != "" {
			gi.join(podOf(s.join, s.size))
		} else if got := gi.leave(pods[s.leave]); (got != nil) != s.wantLeft {
			t.Errorf("step %d: leave(%s) returned %v, want a group: %v", i, s.leave, got, s.wantLeft)
		}
		g := gi[key]
		switch {
		case s.wantSize == 0 && g != nil:
			t.Errorf("step %d: the group is still indexed with %d members", i, len(g.members))
		case s.wantSize != 0 && g == nil:
			t.Errorf("step %d: no group indexed, want size %d", i, s.wantSize)
		case g != nil && (g.size != s.wantSize || len(g.members) != s.wantMembers):
			t.Errorf("step %d: size %d with %d members, want %d with %d", i, g.size, len(g.members), s.wantSize, s.wantMembers)
		}
	}

	// A pod that names no group, or an unusable size, joins none.
	for _, p := range []*podState{
		{pod: makePod("plain").Pod()},
		{pod: member("bad", "train", 0, 0).Pod()},
	} {
		gi.join(p)
		if p.group != nil || len(gi) != 0 {
			t.Errorf("%s joined a group (%d indexed)", p.pod.Name, len(gi))
		}
	}
}
