package quota

import (
	"fmt"
	"slices"
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

// worldPodGroups is how many PodGroups each namespace of the world may have.
const worldPodGroups = 2

// randomPodGroup makes a gated pod name one of its namespace's PodGroups.
func (w *world) randomPodGroup(b *podBuilder, mp *mPod, ns string) {
	name := fmt.Sprintf("pg%d", w.rng.IntN(worldPodGroups))
	b.PodGroup(name)
	mp.podGroup = name
	mp.groupName, mp.groupSize = PodGroupPrefix+name, w.podGroups[jobKey(ns, name)]
}

// withPodGroup is the view p resolved against the world's PodGroups.
func (w *world) withPodGroup(p Pod) Pod {
	if p.PodGroup == nil {
		return p
	}
	minCount, ok := w.podGroups[jobKey(p.Namespace, p.PodGroup.Name)]
	return ResolvePodGroup(p, PodGroupInfo{Exists: ok, MinCount: minCount})
}

// podGroupMissing says whether a pod names a PodGroup that does not exist.
func (w *world) podGroupMissing(p *mPod) bool {
	if p.podGroup == "" {
		return false
	}
	_, ok := w.podGroups[jobKey(p.obj.Namespace, p.podGroup)]
	return !ok
}

// changePodGroup creates a PodGroup of the world, or changes its minCount.
func (w *world) changePodGroup() {
	ns := worldNamespaces[w.rng.IntN(len(worldNamespaces))]
	w.setPodGroup(ns, fmt.Sprintf("pg%d", w.rng.IntN(worldPodGroups)), 1+w.rng.IntN(3))
}

// setPodGroup sets a PodGroup's minCount (creating it) and gives the core again every
// pod that names it, at the version the core last saw.
func (w *world) setPodGroup(ns, name string, minCount int) {
	w.podGroups[jobKey(ns, name)] = minCount
	w.logf("podgroup %s/%s minCount %d", ns, name, minCount)
	for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
		p := w.pods[uid]
		if p.obj.Namespace != ns || p.podGroup != name {
			continue
		}
		p.groupSize = minCount
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
		if p := w.pods[uid]; w.podGroupMissing(p) {
			w.setPodGroup(p.obj.Namespace, p.podGroup, 1)
		}
	}
}
