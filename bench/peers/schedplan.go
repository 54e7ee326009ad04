package peers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// schedConfigPath is Kueue's baseline scheduler performance scenario in its module:
// test/performance/scheduler/runner/generator reads it, and the same module's
// rangespec.yaml holds what its runs are checked against.
const schedConfigPath = "test/performance/scheduler/configs/baseline/generator.yaml"

// schedConfig is the generator's configuration (runner/generator.Config in Kueue's
// module), read with the same field names: cohorts of ClusterQueues, each with sets of
// workloads created at a fixed interval. Kueue's topology fields (TAS) are not read.
type schedConfig struct {
	Cohorts []struct {
		ClassName  string `json:"className"`
		Count      int    `json:"count"`
		QueuesSets []struct {
			ClassName           string `json:"className"`
			Count               int    `json:"count"`
			NominalQuota        string `json:"nominalQuota"`
			BorrowingLimit      string `json:"borrowingLimit"`
			ReclaimWithinCohort string `json:"reclaimWithinCohort"`
			WithinClusterQueue  string `json:"withinClusterQueue"`
			WorkloadsSets       []struct {
				Count              int  `json:"count"`
				CreationIntervalMs uint `json:"creationIntervalMs"`
				Workloads          []struct {
					ClassName string `json:"className"`
					RuntimeMs uint   `json:"runtimeMs"`
					Priority  int32  `json:"priority"`
					Request   string `json:"request"`
					PodCount  int    `json:"podCount"`
				} `json:"workloads"`
			} `json:"workloadsSets"`
		} `json:"queuesSets"`
	} `json:"cohorts"`
}

// schedQueue is one ClusterQueue of the scenario: a Budget under its cohort's
// ClusterBudget for quotagate.
type schedQueue struct {
	Name, Cohort, Class string
	NominalMilli        int64
	// BorrowMilli is the borrowing limit; -1 when the config sets none (Kueue: no limit
	// but the cohort's).
	BorrowMilli int64
	// Reclaim and Within are the config's preemption policies, reported, not applied.
	Reclaim, Within string
}

// schedWorkload is one workload of the scenario: Pods pods of CPUMilli each, created At
// after the start, running Runtime once admitted.
type schedWorkload struct {
	Name, Queue, Class string
	Priority           int32
	CPUMilli           int64
	Pods               int
	At, Runtime        time.Duration
	// Set is the workload set's index among all the scenario's sets (one creator each).
	Set int
}

// milli is what the workload requests, all its pods together.
func (w schedWorkload) milli() int64 { return w.CPUMilli * int64(w.Pods) }

// schedPlan is the scenario, expanded: its queues and every workload, in the order of
// their creation times within each set.
type schedPlan struct {
	Queues    []schedQueue
	Workloads []schedWorkload
	// Sets is how many workload sets (creators running side by side) there are.
	Sets int
}

func readSchedConfig(kueueModuleDir string) (schedConfig, error) {
	raw, err := os.ReadFile(filepath.Join(kueueModuleDir, schedConfigPath))
	if err != nil {
		return schedConfig{}, fmt.Errorf("reading Kueue's scheduler performance configuration: %w", err)
	}
	return parseSchedConfig(raw)
}

// parseSchedConfig reads the generator's YAML as its LoadConfig does.
func parseSchedConfig(raw []byte) (schedConfig, error) {
	var c schedConfig
	if err := yaml.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("parsing %s: %w", schedConfigPath, err)
	}
	if len(c.Cohorts) == 0 {
		return c, errors.New(schedConfigPath + ": no cohorts")
	}
	return c, nil
}

func milliOf(q string) (int64, error) {
	v, err := resource.ParseQuantity(q)
	if err != nil {
		return 0, err
	}
	return v.MilliValue(), nil
}

// plan expands c as Kueue's generator does (the same names, counts, intervals and
// requests), with each workload set's count divided by scale (rounded up; 1 is the full
// size). The generator waits one interval before each create, so a set's k-th workload
// is created (k+1) intervals after the start.
func (c schedConfig) plan(scale int) (schedPlan, error) {
	var p schedPlan
	if scale < 1 {
		return p, fmt.Errorf("scale %d: want 1 or more", scale)
	}
	for _, cs := range c.Cohorts {
		for ci := range cs.Count {
			cohort := fmt.Sprintf("%s-%d", cs.ClassName, ci)
			for qsi, qs := range cs.QueuesSets {
				nominal, err := milliOf(qs.NominalQuota)
				if err != nil {
					return p, fmt.Errorf("queue set %s: nominalQuota: %w", qs.ClassName, err)
				}
				borrow := int64(-1)
				if qs.BorrowingLimit != "" {
					if borrow, err = milliOf(qs.BorrowingLimit); err != nil {
						return p, fmt.Errorf("queue set %s: borrowingLimit: %w", qs.ClassName, err)
					}
				}
				for qi := range qs.Count {
					q := schedQueue{Name: fmt.Sprintf("%s-%d-%d-%s", qs.ClassName, qsi, qi, cohort), Cohort: cohort, Class: qs.ClassName,
						NominalMilli: nominal, BorrowMilli: borrow, Reclaim: qs.ReclaimWithinCohort, Within: qs.WithinClusterQueue}
					p.Queues = append(p.Queues, q)
					for wsi, ws := range qs.WorkloadsSets {
						interval := time.Duration(ws.CreationIntervalMs) * time.Millisecond
						k := 0
						for si := range (ws.Count + scale - 1) / scale {
							for ti, wt := range ws.Workloads {
								cpu, err := milliOf(wt.Request)
								if err != nil {
									return p, fmt.Errorf("workload class %s: request: %w", wt.ClassName, err)
								}
								k++
								p.Workloads = append(p.Workloads, schedWorkload{
									Name: fmt.Sprintf("%s-%d-%d-%d", wt.ClassName, wsi, si, ti), Queue: q.Name, Class: wt.ClassName,
									Priority: wt.Priority, CPUMilli: cpu, Pods: max(wt.PodCount, 1),
									At: time.Duration(k) * interval, Runtime: time.Duration(wt.RuntimeMs) * time.Millisecond, Set: p.Sets,
								})
							}
						}
						p.Sets++
					}
				}
			}
		}
	}
	return p, nil
}

// classes are the workload classes of the plan, in the order they first appear.
func (p schedPlan) classes() []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range p.Workloads {
		if !seen[w.Class] {
			seen[w.Class] = true
			out = append(out, w.Class)
		}
	}
	return out
}

// cohortMilli is the quota of each cohort: the sum of its queues' nominal quotas, all
// its members may use together.
func (p schedPlan) cohortMilli() map[string]int64 {
	out := map[string]int64{}
	for _, q := range p.Queues {
		out[q.Cohort] += q.NominalMilli
	}
	return out
}
