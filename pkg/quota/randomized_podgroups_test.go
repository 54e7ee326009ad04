package quota

import (
	"fmt"
	"slices"
	"strings"
)

// The model's PodGroups (docs/start-control.md, "PodGroups"): a gated pod of the world
// may name PodGroup pg0 or pg1 of its namespace, sometimes with a quotagate.io/group
// label too (which must be ignored). A PodGroup does not exist at first; a move of the
// world creates one with a gang of minCount 1 to 3, or changes its minCount, and gives
// the core again its pods, as the manager does (ResolvePodGroup against the world's
// PodGroups). The model counts such a pod a member of group PodGroupPrefix+name of
// the PodGroup's minCount, so the group checks hold for them: a gang is never partly
// admitted (admitAndCheck), never while its PodGroup does not exist, and in a calm world
// (every PodGroup created) it is admitted once it fits.
//
// PodGroups cpg-a, cpg-b and cpg-c of a namespace are the children of its
// CompositePodGroup cpg, a gang whose minGroupCount (1 to 3) a move sets, creating it.
// Their pods are members of group CompositePodGroupPrefix+"cpg": its first admission
// takes minGroupCount complete children at least, and never a child short of its
// minCount; a child admitted later is complete then (checkComposites).

// worldPodGroups are the PodGroups each namespace of the world may have: two of their
// own, three below CompositePodGroup cpg.
var worldPodGroups = []string{"pg0", "pg1", "cpg-a", "cpg-b", "cpg-c"}

// composite is the CompositePodGroup above the model's PodGroups named cpg-*.
const composite = "cpg"

// parentOf is the CompositePodGroup above a PodGroup of the world ("" for none).
func parentOf(podGroup string) string {
	if strings.HasPrefix(podGroup, composite+"-") {
		return composite
	}
	return ""
}

// randomPodGroup makes a gated pod name one of its namespace's PodGroups.
func (w *world) randomPodGroup(b *podBuilder, mp *mPod, ns string) {
	name := worldPodGroups[w.rng.IntN(2)]
	if w.cpgRng.IntN(2) == 0 {
		name = worldPodGroups[2+w.cpgRng.IntN(3)]
	}
	b.PodGroup(name)
	mp.podGroup = name
	w.setGroupOf(mp, ns)
}

// setGroupOf gives a pod that names a PodGroup the group the core makes of it.
func (w *world) setGroupOf(mp *mPod, ns string) {
	if parentOf(mp.podGroup) != "" {
		mp.groupName, mp.groupSize = CompositePodGroupPrefix+composite, w.composites[jobKey(ns, composite)]
		return
	}
	mp.groupName, mp.groupSize = PodGroupPrefix+mp.podGroup, w.podGroups[jobKey(ns, mp.podGroup)]
}

// withPodGroup is the view p resolved against the world's PodGroups.
func (w *world) withPodGroup(p Pod) Pod {
	if p.PodGroup == nil {
		return p
	}
	minCount, ok := w.podGroups[jobKey(p.Namespace, p.PodGroup.Name)]
	info := PodGroupInfo{Exists: ok, MinCount: minCount}
	if parent := parentOf(p.PodGroup.Name); parent != "" {
		n, ok := w.composites[jobKey(p.Namespace, parent)]
		info.Parents = []CompositePodGroupInfo{{Name: parent, Exists: ok, MinGroupCount: n}}
	}
	return ResolvePodGroup(p, info)
}

// podGroupMissing says whether a pod names a PodGroup that does not exist.
func (w *world) podGroupMissing(p *mPod) bool {
	if p.podGroup == "" {
		return false
	}
	_, ok := w.podGroups[jobKey(p.obj.Namespace, p.podGroup)]
	if parent := parentOf(p.podGroup); parent != "" {
		_, exists := w.composites[jobKey(p.obj.Namespace, parent)]
		ok = ok && exists
	}
	return !ok
}

// changePodGroup creates a PodGroup of the world, or changes its minCount.
func (w *world) changePodGroup() {
	ns := worldNamespaces[w.rng.IntN(len(worldNamespaces))]
	name, minCount := worldPodGroups[w.rng.IntN(2)], 1+w.rng.IntN(3)
	switch w.cpgRng.IntN(3) {
	case 0:
		w.setComposite(ns, 1+w.cpgRng.IntN(3))
		return
	case 1:
		name = worldPodGroups[2+w.cpgRng.IntN(3)]
	}
	w.setPodGroup(ns, name, minCount)
}

// setComposite sets the minGroupCount of a namespace's CompositePodGroup (creating
// it) and gives the core again every pod below it.
func (w *world) setComposite(ns string, minGroupCount int) {
	w.composites[jobKey(ns, composite)] = minGroupCount
	w.logf("compositepodgroup %s/%s minGroupCount %d", ns, composite, minGroupCount)
	w.reresolve(func(p *mPod) bool { return p.obj.Namespace == ns && parentOf(p.podGroup) == composite })
}

// setPodGroup sets a PodGroup's minCount (creating it) and gives the core again every
// pod that names it, at the version the core last saw.
func (w *world) setPodGroup(ns, name string, minCount int) {
	w.podGroups[jobKey(ns, name)] = minCount
	w.logf("podgroup %s/%s minCount %d", ns, name, minCount)
	w.reresolve(func(p *mPod) bool { return p.obj.Namespace == ns && p.podGroup == name })
}

// reresolve gives the core again, at the version it last saw, every pod that names a
// PodGroup and matches, as the manager does after an event of a PodGroup.
func (w *world) reresolve(match func(*mPod) bool) {
	for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
		p := w.pods[uid]
		if p.podGroup == "" || !match(p) {
			continue
		}
		w.setGroupOf(p, p.obj.Namespace)
		if p.lastView.UID == "" {
			continue
		}
		p.lastView = w.withPodGroup(p.lastView)
		w.q.UpsertPod(p.lastView)
		w.sync(p)
	}
}

// createAllPodGroups creates every PodGroup a pod names that does not exist (the calm
// world), with a minCount of 1.
func (w *world) createAllPodGroups() {
	for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
		p := w.pods[uid]
		if !w.podGroupMissing(p) {
			continue
		}
		if _, ok := w.podGroups[jobKey(p.obj.Namespace, p.podGroup)]; !ok {
			w.setPodGroup(p.obj.Namespace, p.podGroup, 1)
		}
		if parent := parentOf(p.podGroup); parent != "" {
			if _, ok := w.composites[jobKey(p.obj.Namespace, parent)]; !ok {
				w.setComposite(p.obj.Namespace, 1)
			}
		}
	}
}

// compositeStarted returns, by namespace/PodGroup, the model's composite children
// with a member admitted or running; the gang of a namespace counts as started when
// any of them does.
func (w *world) compositeStarted() map[string]bool {
	out := map[string]bool{}
	for _, p := range w.pods {
		if parentOf(p.podGroup) != "" && p.state != mGated {
			out[jobKey(p.obj.Namespace, p.podGroup)] = true
			out[p.obj.Namespace] = true
		}
	}
	return out
}

// checkComposites checks an Admit's pods below CompositePodGroups: a child not
// started before is admitted with minCount of its pods at least, and a gang not
// started before with minGroupCount complete children at least.
func (w *world) checkComposites(admitted []*mPod, before map[string]bool) error {
	per := map[string]int{}
	for _, p := range admitted {
		if parentOf(p.podGroup) != "" {
			per[jobKey(p.obj.Namespace, p.podGroup)]++
		}
	}
	complete := map[string]int{}
	for _, k := range slices.Sorted(mapsKeys(per)) {
		n, minCount := per[k], w.podGroups[k]
		if !before[k] && n < minCount {
			return fmt.Errorf("PodGroup %s of CompositePodGroup %s: %d pods admitted, minCount %d, none admitted before", k, composite, n, minCount)
		}
		complete[strings.SplitN(k, "/", 2)[0]]++
	}
	for ns, n := range complete {
		if want := w.composites[jobKey(ns, composite)]; !before[ns] && n < want {
			return fmt.Errorf("CompositePodGroup %s/%s: first admitted with %d complete children, minGroupCount %d", ns, composite, n, want)
		}
	}
	return nil
}

// compositeGoes returns which PodGroups below a namespace's CompositePodGroup may go
// (one of their pods runs, or as many exist as their minCount), and whether the gang
// may (it runs, or minGroupCount of them may go).
func (w *world) compositeGoes(ns string) (map[string]bool, bool) {
	members := map[string]int{}
	started := w.compositeStarted()
	for _, m := range w.pods {
		if m.obj.Namespace == ns && parentOf(m.podGroup) != "" && (m.state != mGated || !uncountable(m.usage)) {
			members[m.podGroup]++
		}
	}
	goes := map[string]bool{}
	for pg, n := range members {
		goes[pg] = started[jobKey(ns, pg)] || n >= w.podGroups[jobKey(ns, pg)]
	}
	complete := 0
	for _, ok := range goes {
		if ok {
			complete++
		}
	}
	return goes, started[ns] || complete >= w.composites[jobKey(ns, composite)]
}

// compositeIncomplete reports whether a pod below a CompositePodGroup cannot be
// admitted for its gang: its own PodGroup may not go, or the gang may not.
func (w *world) compositeIncomplete(p *mPod) bool {
	if parentOf(p.podGroup) == "" {
		return false
	}
	goes, gang := w.compositeGoes(p.obj.Namespace)
	return !gang || !goes[p.podGroup]
}

// compositeUnit keeps of a composite gang's members those whose PodGroup may go:
// what the gang is admitted with, and so what must fit.
func (w *world) compositeUnit(p *mPod, unit []*mPod) []*mPod {
	if parentOf(p.podGroup) == "" {
		return unit
	}
	goes, _ := w.compositeGoes(p.obj.Namespace)
	return slices.DeleteFunc(slices.Clone(unit), func(m *mPod) bool { return !goes[m.podGroup] })
}
