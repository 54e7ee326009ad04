package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// memoryPoint is the manager's heap with a number of gated pods.
type memoryPoint struct {
	Pods        int    `json:"gatedPods"`
	HeapInuse   uint64 `json:"heapInuseBytes"`
	HeapObjects uint64 `json:"heapObjects"`
}

// memoryResult is the memory figure.
type memoryResult struct {
	Points []memoryPoint `json:"points"`
}

// perPod is the marginal heap per gated pod between the first and the last point.
func (r memoryResult) perPod() float64 {
	if len(r.Points) < 2 {
		return 0
	}
	a, b := r.Points[0], r.Points[len(r.Points)-1]
	return ratio(float64(b.HeapInuse)-float64(a.HeapInuse), float64(b.Pods-a.Pods))
}

// heapInuse collects garbage and returns the heap in use and the live objects of this
// process. Between points the process holds nothing but the manager and the clients,
// so differences between points are the manager's.
func heapInuse() (uint64, uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.HeapObjects
}

// measureMemory starts a fresh manager with nothing to do, then adds gated pods up to
// each level (ascending) behind a Budget they can never fit in, and reads the heap once
// the manager's status counts them all. The heap profile at the last level is written
// to heapProfile.
func (e *env) measureMemory(ctx context.Context, levels []int, heapProfile string, logf func(string, ...any)) (memoryResult, error) {
	var r memoryResult
	if err := e.useManager(ctx, defaultManagerSettings(), false); err != nil {
		return r, err
	}
	ns, err := e.newNamespace(ctx, "memory", true)
	if err != nil {
		return r, err
	}
	if err := e.createBudget(ctx, ns, "0"); err != nil {
		return r, err
	}
	spec := podSpec{prefix: "p", cpu: "10m", gates: []string{v1alpha1.SchedulingGate}}
	have := 0
	for _, level := range levels {
		if level < have {
			return r, fmt.Errorf("memory levels must ascend: %v", levels)
		}
		if err := e.createPods(ctx, ns, spec, have, level); err != nil {
			return r, err
		}
		have = level
		if err := e.waitGated(ctx, ns, level); err != nil {
			return r, err
		}
		heap, objects := heapInuse()
		r.Points = append(r.Points, memoryPoint{Pods: level, HeapInuse: heap, HeapObjects: objects})
		logf("  %d gated pods: heap in use %.1f MiB, %d objects", level, float64(heap)/(1<<20), objects)
	}
	if heapProfile != "" {
		if err := writeHeapProfile(heapProfile); err != nil {
			return r, err
		}
	}
	// The pods stay: this is the last figure, and stopping the cluster drops them at
	// once, where deleting them one by one would take minutes.
	return r, nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating heap profile: %w", err)
	}
	defer func() { _ = f.Close() }()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		return fmt.Errorf("writing heap profile: %w", err)
	}
	return nil
}
