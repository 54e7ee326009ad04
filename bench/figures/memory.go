package figures

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/bench/report"
)

// memoryPoint is the manager's heap with a number of gated pods.
type memoryPoint struct {
	Pods        int    `json:"gatedPods"`
	HeapInuse   uint64 `json:"heapInuseBytes"`
	HeapObjects uint64 `json:"heapObjects"`
	StackInuse  uint64 `json:"stackInuseBytes"`
	Goroutines  int    `json:"goroutines"`
	// IdleCores is the CPU this process used, in cores, over idleWindow once nothing
	// changes: the manager's cost of holding the pods.
	IdleCores float64 `json:"idleCores"`
}

// IdleWindow is how long the idle CPU of the manager is measured at each point.
const IdleWindow = 3 * time.Second

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
	return report.Ratio(float64(b.HeapInuse)-float64(a.HeapInuse), float64(b.Pods-a.Pods))
}

// ReadMemory collects garbage and reads the heap and stacks of this process. Between points the process holds nothing but the manager and the clients,
// so differences between points are the manager's.
func ReadMemory(pods int) memoryPoint {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memoryPoint{
		Pods: pods, HeapInuse: m.HeapInuse, HeapObjects: m.HeapObjects,
		StackInuse: m.StackInuse, Goroutines: runtime.NumGoroutine(),
	}
}

// WaitGoroutinesSettled waits until this process's goroutine count holds still for a
// second. client-go's event broadcaster sends each event from a goroutine of its own,
// so a manager that has just announced why thousands of pods wait holds thousands of
// events in flight; once they are sent, what is left is the steady state.
func WaitGoroutinesSettled(ctx context.Context) error {
	last, stable := -1, 0
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		n := runtime.NumGoroutine()
		if n == last {
			stable++
		} else {
			last, stable = n, 0
		}
		return stable >= 4, nil
	})
}

// measureMemory starts a fresh manager with nothing to do, then adds gated pods up to
// each level (ascending) behind a Budget they can never fit in, and reads the heap once
// the manager's status counts them all. The heap profile at the last level is written
// to heapProfile.
func (e *Env) measureMemory(ctx context.Context, levels []int, heapProfile string, logf func(string, ...any)) (memoryResult, error) {
	var r memoryResult
	if err := e.UseManager(ctx, DefaultManagerSettings(), false); err != nil {
		return r, err
	}
	ns, err := e.NewNamespace(ctx, "memory", true)
	if err != nil {
		return r, err
	}
	if err := e.CreateBudget(ctx, ns, "0"); err != nil {
		return r, err
	}
	spec := PodSpec{Prefix: "p", CPU: "10m", Gates: []string{v1alpha1.SchedulingGate}}
	have := 0
	for _, level := range levels {
		if level < have {
			return r, fmt.Errorf("memory levels must ascend: %v", levels)
		}
		if err := e.CreatePods(ctx, ns, spec, have, level); err != nil {
			return r, err
		}
		have = level
		if err := e.WaitGated(ctx, ns, level); err != nil {
			return r, err
		}
		if err := WaitGoroutinesSettled(ctx); err != nil {
			return r, fmt.Errorf("waiting for the manager's events to be sent: %w", err)
		}
		pt := ReadMemory(level)
		if pt.IdleCores, err = IdleCores(ctx); err != nil {
			return r, err
		}
		r.Points = append(r.Points, pt)
		logf("  %d gated pods: heap in use %.1f MiB, %d objects, %d goroutines, %.3f cores idle", level, report.MiB(pt.HeapInuse), pt.HeapObjects, pt.Goroutines, pt.IdleCores)
	}
	if heapProfile != "" {
		if err := WriteHeapProfile(heapProfile); err != nil {
			return r, err
		}
	}
	// The pods stay: this is the last figure, and stopping the cluster drops them at
	// once, where deleting them one by one would take minutes.
	return r, nil
}

func WriteHeapProfile(path string) error {
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

// IdleCores measures the CPU this process uses over idleWindow, in cores.
func IdleCores(ctx context.Context) (float64, error) {
	before, err := cpuSeconds(os.Getpid())
	if err != nil {
		return 0, err
	}
	select {
	case <-time.After(IdleWindow):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	after, err := cpuSeconds(os.Getpid())
	if err != nil {
		return 0, err
	}
	return (after - before) / IdleWindow.Seconds(), nil
}
