package estimate

// What a start rests on (Start.Basis, Start.Samples): the least trusted learned end it
// waited for, said as a pod of its namespace may read it.

// weak is what a learned end rests on, to find the least trusted among those a start
// waited for: the widest circle, then the fewest runs. namespace is the namespace of the
// pod that ended: a start of a pod of another namespace does not name its workload
// (basisFor).
type weak struct {
	known     bool // a learned duration (not a deadline, a declaration)
	level     Level
	samples   int
	basis     string
	namespace string
}

// basisFor is w's basis as a start of a pod of namespace says it: a tenant learns no
// other namespace's workloads from an estimate, only that what it waited for was learned
// there, and from how many runs.
func (w weak) basisFor(namespace string) string {
	if w.basis == "" || w.namespace == namespace {
		return w.basis
	}
	return durationsOf(w.samples, "a workload in another namespace")
}

// weaker is the less trusted of w and o.
func (w weak) weaker(o weak) weak {
	switch {
	case !o.known:
		return w
	case !w.known, o.level > w.level, o.level == w.level && o.samples < w.samples:
		return o
	}
	return w
}
