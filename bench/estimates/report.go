package estimates

import (
	"time"

	"github.com/quotagate/quotagate/bench/figures"
	"github.com/quotagate/quotagate/bench/report"
)

// Suite is bench/estimates/benchmarks-estimates.json: one Report per workload; the Markdown
// report is rendered from it alone.
type Suite struct {
	Date    string                  `json:"date"`
	Command string                  `json:"command"`
	JSON    string                  `json:"json"`
	Took    string                  `json:"took"`
	Machine report.Machine          `json:"machine"`
	Manager figures.ManagerSettings `json:"managerSettings"`
	// EstimateInterval is the manager's --estimate-interval, Poll how often the
	// benchmark read the pendingpods.
	EstimateInterval string   `json:"estimateInterval"`
	Poll             string   `json:"poll"`
	Scale            float64  `json:"scale"`
	Seed             uint64   `json:"seed"`
	Warm             int      `json:"warm"`
	Workloads        []Report `json:"workloads"`
}

// Report is what one workload's run saw.
type Report struct {
	Workload Workload `json:"workload"`
	// Slots, Warm, Scale and Seed are the suite's, for the workload's tables.
	Slots int       `json:"slots"`
	Warm  int       `json:"warm"`
	Scale float64   `json:"scale"`
	Seed  uint64    `json:"seed"`
	Kinds []Kind    `json:"kinds"`
	Plan  []Arrival `json:"plan"`
	Pods  []Pod     `json:"pods"`
	// Queue is the budgets' gated pods at each poll.
	Queue         []int         `json:"queue"`
	Polls         int           `json:"polls"`
	PollErrors    int           `json:"pollErrors"`
	LastPollError string        `json:"lastPollError,omitempty"`
	Records       []TrackRecord `json:"trackRecords,omitempty"`
	Took          string        `json:"took"`
}

// Judgement is what the report concludes from the pods.
type Judgement struct {
	Warm     bool
	WarmAt   time.Duration // from the first Job's creation
	Judged   []Pod
	First    Errors
	Head     Errors
	NotSeen  int // judged pods admitted before any poll found an estimate of them
	NotEnded int // pods (of all) not seen ended
}

// Targets of the issue, for every workload: quotagate's median error at most
// OracleTarget times the oracle's, both when created and at the head; the share of
// starts its ranges held within CoverageSlack points of what they claim (Coverage);
// and on the harder workloads (Workload.Harder) a median error at least BaselineTarget
// times smaller than the baseline's.
const (
	OracleTarget   = 1.25
	Coverage       = 80.0
	CoverageSlack  = 5.0
	BaselineTarget = 1.5
)

// Verdict is a moment's errors set against the targets.
type Verdict struct {
	Quotagate, Oracle, Baseline Quantiles
	// OracleRatio is quotagate's median error over the oracle's, BaselineRatio the
	// baseline's over quotagate's (0 when either is not known), Coverage the share of
	// ranged estimates that held the start (percent).
	OracleRatio, BaselineRatio, Coverage float64
	// OracleMet, CoverageMet and BaselineMet say whether each target was met;
	// BaselineMet is true where the workload has no baseline target.
	OracleMet, CoverageMet, BaselineMet bool
}

// Met reports whether every target of the moment was met.
func (v Verdict) Met() bool { return v.OracleMet && v.CoverageMet && v.BaselineMet }

// verdict sets a moment's errors against the targets.
func verdict(e Errors, harder bool) Verdict {
	v := Verdict{Quotagate: QuantilesOf(e.Quotagate), Oracle: QuantilesOf(e.Oracle), Baseline: QuantilesOf(e.Baseline), Coverage: e.Coverage()}
	if v.Oracle.P50 > 0 && v.Quotagate.N > 0 {
		v.OracleRatio = v.Quotagate.P50 / v.Oracle.P50
	}
	v.BaselineRatio = e.Improvement()
	v.OracleMet = v.Quotagate.N > 0 && v.Oracle.N > 0 && v.Quotagate.P50 <= OracleTarget*v.Oracle.P50
	v.CoverageMet = e.Ranged > 0 && v.Coverage >= Coverage-CoverageSlack && v.Coverage <= Coverage+CoverageSlack
	v.BaselineMet = !harder || (v.Quotagate.N > 0 && v.BaselineRatio >= BaselineTarget)
	return v
}

func (r Report) judge() Judgement {
	var j Judgement
	names := r.Workload.initial()
	if len(r.Workload.Streams) == 0 {
		for _, k := range r.Kinds {
			names = append(names, k.Name)
		}
	}
	warm, ok := WarmAt(r.Pods, names, r.Warm)
	if !ok {
		return j
	}
	j.Warm, j.Judged = true, Judged(r.Pods, warm)
	if len(r.Pods) > 0 {
		j.WarmAt = warm.Sub(r.Pods[0].Created)
	}
	j.First = ErrorsAt(j.Judged, func(p Pod) *Sighting { return p.First })
	j.Head = ErrorsAt(j.Judged, func(p Pod) *Sighting { return p.Head })
	for _, p := range j.Judged {
		if p.First == nil {
			j.NotSeen++
		}
	}
	for _, p := range r.Pods {
		if p.Ended.IsZero() {
			j.NotEnded++
		}
	}
	return j
}
