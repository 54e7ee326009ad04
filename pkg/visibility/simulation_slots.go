package visibility

import (
	"fmt"
	"sync"
)

// simulationSlots admit at most total simulations at once, and at most one per
// namespace: a namespace is a tenant, and one tenant's what-ifs never take every slot,
// nor make another tenant's wait. A request that finds no room is refused at once
// (429), never queued.
type simulationSlots struct {
	total int

	mu      sync.Mutex
	running map[string]bool // namespaces with a simulation running
}

func newSimulationSlots(total int) *simulationSlots {
	return &simulationSlots{total: total, running: map[string]bool{}}
}

// acquire takes a slot for namespace, or says why there is none; release must be
// called once the simulation ends (a second call does nothing).
func (s *simulationSlots) acquire(namespace string) (release func(), refused string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.running[namespace]:
		return nil, fmt.Sprintf("a pod simulation of namespace %s is running: one runs per namespace at a time; retry once it has answered", namespace)
	case len(s.running) >= s.total:
		return nil, fmt.Sprintf("the manager runs %d pod simulations of other namespaces, its limit (--simulation-concurrency); retry shortly", len(s.running))
	}
	s.running[namespace] = true
	return sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.running, namespace)
	}), ""
}
