package estimates

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/visibility"
)

// poller reads each budget's pendingpods from the manager's visibility handler every
// pollInterval, and keeps each pod's first sighting with an estimate and its first at
// the head of its budget's queue, each with the baseline's and the oracle's estimates
// at that moment.
type poller struct {
	handler  http.Handler
	client   kubernetes.Interface
	workload Workload
	budgets  budgetsOf
	watch    watches
	// draw and rand draw the runs of the oracle (Oracle) from each kind's distribution.
	draw func(kind int, r *rand.Rand) time.Duration
	rand *rand.Rand

	first, head   map[string]*Sighting
	queue         []int
	polls, errors int
	lastError     string
}

func (p *poller) run(ctx context.Context) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := p.poll(ctx); err != nil && ctx.Err() == nil {
			p.errors++
			p.lastError = err.Error()
		}
	}
}

// poll reads every budget's whole queue once.
func (p *poller) poll(ctx context.Context) error {
	at := time.Now()
	lists := make([]visv1.PendingPodList, len(p.budgets.keys))
	total := 0
	for i, key := range p.budgets.keys {
		path := visibility.PendingPodsPath(key)
		req := httptest.NewRequest(http.MethodGet, path+"?limit="+strconv.Itoa(visv1.MaxLimit), nil)
		rec := httptest.NewRecorder()
		p.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			return fmt.Errorf("GET %s: %d %s", path, rec.Code, strings.TrimSpace(rec.Body.String()))
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &lists[i]); err != nil {
			return fmt.Errorf("reading the pendingpods answer: %w", err)
		}
		total += int(lists[i].Total)
	}
	p.polls++
	p.queue = append(p.queue, total)
	started, ended := p.watch.ungated(), p.watch.ended()
	mean := MeanRun(started, ended, at)
	var oracle map[string]time.Duration
	if p.wanted(lists) {
		var err error
		if oracle, err = p.oracle(ctx, at, started); err != nil {
			return err
		}
	}
	for i, list := range lists {
		ns := p.budgets.namespaces[i]
		slots := p.workload.Budgets[i].Slots
		for _, item := range list.Items {
			est := item.EstimatedStart
			if est == nil {
				continue // not estimated yet
			}
			name := ns + "/" + item.Name
			s := &Sighting{At: at, Position: int(item.Position), Unknown: est.Unknown, Ends: est.Ends, Samples: est.Samples,
				Basis: est.Basis, Baseline: Baseline(at, int(item.Position), mean, slots)}
			if est.Median != nil {
				s.Quotagate = est.Median.Time
			}
			if est.Low != nil && est.High != nil {
				s.Low, s.High = est.Low.Time, est.High.Time
			}
			if o, ok := oracle[name]; ok && o >= 0 {
				s.Oracle = at.Add(o)
			}
			if p.first[name] == nil {
				p.first[name] = s
			}
			if item.Position == 1 && p.head[name] == nil {
				p.head[name] = s
			}
		}
	}
	return nil
}

// wanted reports whether a listed pod's first or head sighting is still to be kept:
// only then is the oracle worth its draws.
func (p *poller) wanted(lists []visv1.PendingPodList) bool {
	for i, list := range lists {
		for _, item := range list.Items {
			name := p.budgets.namespaces[i] + "/" + item.Name
			if item.EstimatedStart != nil && (p.first[name] == nil || (item.Position == 1 && p.head[name] == nil)) {
				return true
			}
		}
	}
	return false
}

// oracle is Oracle's estimate of each gated pod's start (an offset from at), for the
// world the API server shows at at: every pod of the workload's namespaces not ended,
// its kind read from its label, a pod that holds quota since the watch saw it ungated.
func (p *poller) oracle(ctx context.Context, at time.Time, started map[string]time.Time) (map[string]time.Duration, error) {
	var pods []OraclePod
	var names []string
	for _, ns := range p.budgets.namespaces {
		l, err := p.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing the pods of %s for the oracle: %w", ns, err)
		}
		for i := range l.Items {
			pod := &l.Items[i]
			k := slices.IndexFunc(p.workload.Kinds, func(k Kind) bool { return k.Name == pod.Labels[kindLabel] })
			view := quota.NewPodUnshared(pod, v1alpha1.SchedulingGate, at)
			if k < 0 || view.Terminal {
				continue
			}
			name := ns + "/" + pod.Name
			pods = append(pods, OraclePod{Pod: view, Kind: k, Since: started[name]})
			names = append(names, name)
		}
	}
	starts := Oracle(at, p.budgets.core, p.budgets.labels, pods, oracleDraws, p.draw, p.rand)
	out := make(map[string]time.Duration, len(pods))
	for i, pod := range pods {
		if pod.Pod.Gated {
			out[names[i]] = starts[i]
		}
	}
	return out, nil
}

// drawScaled draws a run of kinds[kind] times scale, as Plan does.
func drawScaled(kinds []Kind, scale float64) func(int, *rand.Rand) time.Duration {
	return func(kind int, r *rand.Rand) time.Duration {
		return time.Duration(max(kinds[kind].draw(r)*scale, minRun.Seconds()) * float64(time.Second))
	}
}
