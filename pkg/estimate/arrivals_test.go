package estimate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/quotagate/quotagate/pkg/quota"
)

// etlPod is a pod of Job etl-<n> in team-a (workload etl) created at, with priority.
func etlPod(n int, at time.Time, priority int32) (quota.Pod, Facts) {
	b := podIn("team-a", fmt.Sprintf("etl-%d-abcde", n), 0, "cpu=1").Owner("batch/v1", "Job", fmt.Sprintf("etl-%d", n), true).Priority(priority).Gated()
	b.Obj().CreationTimestamp = metaTime(at)
	return view(b), FactsOf(b.Obj())
}

// observeEvery records n creations of workload etl at priority, one every gap, the last
// at last.
func observeEvery(a *Arrivals, n int, gap time.Duration, last time.Time, priority int32) {
	for i := range n {
		p, f := etlPod(i, last.Add(-time.Duration(n-1-i)*gap), priority)
		a.Observe(p, &f)
	}
}

func TestArrivalsStreams(t *testing.T) {
	t.Run("a workload's creations are one stream, Jobs numbered alike", func(t *testing.T) {
		a := NewArrivals(0)
		observeEvery(a, 10, 20*time.Second, t0.Add(-5*time.Second), 1000)
		got := a.Streams(t0)
		if len(got) != 1 {
			t.Fatalf("got %d streams, want 1: %+v", len(got), got)
		}
		st := got[0]
		want := ArrivalKey{Namespace: "team-a", OwnerKind: "Job", Owner: "etl", Priority: 1000}
		if st.Key != want {
			t.Errorf("key %+v, want %+v", st.Key, want)
		}
		// 9 gaps from the first creation (185 s before t0) to t0.
		if st.Gaps != 9 || st.Span != 185*time.Second || st.Gap != 185*time.Second/9 {
			t.Errorf("gaps %d over %v (mean %v), want 9 over 3m5s", st.Gaps, st.Span, st.Gap)
		}
		if !st.Until.Equal(t0.Add(185 * time.Second)) {
			t.Errorf("drawn until %v after t0, want as far ahead as its history reaches back, 3m5s", st.Until.Sub(t0))
		}
		if !st.Template.Gated || st.Template.Priority != 1000 || st.Template.Name != "" || st.Template.UID != "" {
			t.Errorf("template %+v: want a gated pod of priority 1000 with no name or UID of its own", st.Template)
		}
	})
	t.Run("fewer than MinArrivals moments are no stream", func(t *testing.T) {
		a := NewArrivals(0)
		observeEvery(a, MinArrivals-1, 20*time.Second, t0, 0)
		if got := a.Streams(t0); len(got) != 0 {
			t.Errorf("got %d streams, want none", len(got))
		}
	})
	t.Run("pods created in one second are one moment, of the median count", func(t *testing.T) {
		a := NewArrivals(0)
		for i, n := range []int{16, 4, 4, 3} { // a backlog at once, then Jobs of parallelism 4 or 3
			for range n {
				p, f := etlPod(i, t0.Add(time.Duration(i-4)*time.Minute), 0)
				a.Observe(p, &f)
			}
		}
		got := a.Streams(t0)
		if len(got) != 1 || got[0].Gaps != 3 || got[0].Pods != 4 {
			t.Fatalf("got %+v, want one stream of 4 moments, of 4 pods each", got)
		}
	})
	t.Run("a stream quiet for arrivalQuiet gaps has stopped", func(t *testing.T) {
		a := NewArrivals(0)
		observeEvery(a, 10, 20*time.Second, t0, 0)
		if got := a.Streams(t0.Add(79 * time.Second)); len(got) != 1 {
			t.Errorf("79 s after its last creation (gaps of 20 s): %d streams, want 1", len(got))
		}
		if got := a.Streams(t0.Add(81 * time.Second)); len(got) != 0 {
			t.Errorf("81 s after its last creation (gaps of 20 s): %d streams, want none", len(got))
		}
	})
	t.Run("creations seen late are placed in order, the window keeps the newest", func(t *testing.T) {
		a := NewArrivals(0)
		for i := arrivalWindow + 9; i >= 0; i-- { // newest first, as a list may give them
			p, f := etlPod(i, t0.Add(-time.Duration(arrivalWindow+9-i)*10*time.Second), 0)
			a.Observe(p, &f)
		}
		got := a.Streams(t0)
		if len(got) != 1 || got[0].Gaps != arrivalWindow-1 || got[0].Span != time.Duration(arrivalWindow-1)*10*time.Second {
			t.Fatalf("got %+v, want the last %d moments, 10 s apart", got, arrivalWindow)
		}
	})
	t.Run("at most maxKeys streams, the least recently created dropped", func(t *testing.T) {
		a := NewArrivals(2)
		for prio := range int32(3) {
			observeEvery(a, 3, time.Second, t0.Add(time.Duration(prio)*time.Second), prio)
		}
		var prios []int32
		for _, st := range a.Streams(t0.Add(3 * time.Second)) {
			prios = append(prios, st.Key.Priority)
		}
		if !slices.Equal(prios, []int32{1, 2}) {
			t.Errorf("streams of priorities %v, want [1 2]", prios)
		}
	})
}

// arrivalsWorld is a Budget of 2 CPUs full of two pods that end 60 s after t0 and one
// pod of priority 0 waiting that runs 60 s, beside a stream of etl pods of priority
// prio, created every 20 s so far, each running 30 s.
func arrivalsWorld(prio int32) World {
	w := world([]quota.Budget{budget("team-a", "a", "cpu=2")},
		[]Pod{running("team-a", "r1", "cpu=1", runs(time.Minute)), running("team-a", "r2", "cpu=1", runs(time.Minute))},
		[]Pod{waiting(podIn("team-a", "train", 0, "cpu=1"), runs(time.Minute))})
	l := NewLearner(0)
	a := NewArrivals(0)
	observeEvery(a, 10, 20*time.Second, t0.Add(-10*time.Second), prio)
	for range MinSamples {
		l.Record([]Key{{Level: LevelOwner, Namespace: "team-a", OwnerKind: "Job", Owner: "etl"}}, 30*time.Second)
	}
	b := NewWorldBuilder(t0, l, w.Namespaces, w.Budgets, nil)
	b.AddArrivals(a.Streams(t0))
	w.Arrivals = b.World().Arrivals
	return w
}

// TestSimulateArrivals: pods of a higher priority that typically arrive while a pod
// waits go ahead of it in the simulation, and its range widens with their chance; pods
// of its own priority arrive behind it and change nothing.
func TestSimulateArrivals(t *testing.T) {
	without := arrivalsWorld(1000)
	without.Arrivals = nil
	base := Simulate(without, Options{})[0]
	if !base.Known || base.Median.Sub(t0) != time.Minute {
		t.Fatalf("with no arrivals: %+v, want a start at 1m", base)
	}

	w := arrivalsWorld(1000)
	if len(w.Arrivals) != 1 || w.Arrivals[0].Expect.Source != SourceLearned {
		t.Fatalf("arrivals %+v: want the etl stream with learned runs", w.Arrivals)
	}
	s := Simulate(w, Options{Seed: 1})[0]
	t.Logf("with etl at priority 1000 every 20 s: median %v, range %v to %v", s.Median.Sub(t0), s.Low.Sub(t0), s.High.Sub(t0))
	if !s.Known || s.Median.Sub(t0) <= time.Minute || !s.High.After(s.Median) {
		t.Errorf("with etl pods of a higher priority arriving: %+v, want a start after 1m with a range above it", s)
	}

	same := Simulate(arrivalsWorld(0), Options{Seed: 1})[0]
	if !same.Known || same.Median.Sub(t0) != time.Minute || same.High.Sub(t0) != time.Minute {
		t.Errorf("with etl pods of its own priority arriving: %+v, want a start at 1m, the range too", same)
	}
}

// TestCoverageWithArrivals: in a Budget of 4 CPUs full of train pods (lognormal,
// median 40 s), 8 train pods wait at priority 0 while etl pods (12 s ± 25%) of priority
// 1000 arrive as a Poisson stream; both workloads' runs and the stream's last 32
// creations were learned. The true starts come from replaying the queue with its true
// runs and arrivals, the etl pods first. The ranges hold the true starts as often as
// they claim (80% ± 5), and the median error is smaller than that of the same
// simulation blind to arrivals, whose estimates are early.
func TestCoverageWithArrivals(t *testing.T) {
	const trials, slots, waiting = 400, 4, 8
	const etlGap = 10 * time.Second
	etl := func(r *rand.Rand) time.Duration {
		return time.Duration((9 + 6*r.Float64()) * float64(time.Second))
	}
	r := rand.New(rand.NewPCG(3, 51))
	var inside, insideBlind, total, quiet int
	var errs, errsBlind, signed, signedBlind []float64
	trainKey := Facts{Namespace: "team-a", OwnerKind: "Job", Owner: "train"}
	etlKey := Facts{Namespace: "team-a", OwnerKind: "Job", Owner: "etl"}
	for trial := range trials {
		l, a := NewLearner(0), NewArrivals(0)
		for range Window {
			l.Record(trainKey.Keys(nil), lognormal40(r))
			l.Record(etlKey.Keys(nil), etl(r))
		}
		// The stream's past, back from t0, Poisson as its future is.
		at := t0
		for i := range arrivalWindow {
			at = at.Add(-time.Duration(r.ExpFloat64() * float64(etlGap)))
			p, f := etlPod(i, at, 1000)
			a.Observe(p, &f)
		}
		w := world([]quota.Budget{budget("team-a", "a", fmt.Sprintf("cpu=%d", slots))}, nil, nil)
		free := make([]time.Time, 0, slots)
		for i := range slots {
			elapsed := time.Duration(r.Float64() * float64(60*time.Second))
			d := lognormal40(r)
			for d <= elapsed {
				d = lognormal40(r)
			}
			free = append(free, t0.Add(-elapsed).Add(d))
			f := trainKey
			f.Held = t0.Add(-elapsed)
			w.Running = append(w.Running, Pod{Pod: view(podIn("team-a", fmt.Sprintf("run-%d", i), -600, "cpu=1")), Expect: l.ExpectFacts(&f, nil, t0)})
		}
		for j := range waiting {
			f := trainKey
			w.Waiting = append(w.Waiting, Pod{Pod: view(podIn("team-a", fmt.Sprintf("w-%02d", j), j-60, "cpu=1").Gated()), Expect: l.ExpectFacts(&f, nil, t0)})
		}
		// The truth: at each slot freed, an etl pod that has arrived goes first.
		truly := make([]time.Time, waiting)
		next := t0.Add(time.Duration(r.ExpFloat64() * float64(etlGap)))
		for j := 0; j < waiting; {
			slices.SortFunc(free, time.Time.Compare)
			if !next.After(free[0]) {
				free[0] = free[0].Add(etl(r))
				next = next.Add(time.Duration(r.ExpFloat64() * float64(etlGap)))
				continue
			}
			truly[j] = free[0]
			free[0] = free[0].Add(lognormal40(r))
			j++
		}
		b := NewWorldBuilder(t0, l, w.Namespaces, w.Budgets, nil)
		b.AddArrivals(a.Streams(t0))
		w.Arrivals = b.World().Arrivals
		if len(w.Arrivals) == 0 {
			quiet++ // its last creation was 4 mean gaps ago: taken to have stopped
		}
		blind := w
		blind.Arrivals = nil
		for k, ss := range [][]Start{Simulate(w, Options{Seed: uint64(trial)}), Simulate(blind, Options{Seed: uint64(trial)})} {
			for j, s := range ss {
				if !s.Known {
					t.Fatalf("trial %d: pod %d unknown: %s", trial, j, s.Reason)
				}
				in := !truly[j].Before(s.Low) && !truly[j].After(s.High)
				e := math.Abs(truly[j].Sub(s.Median).Seconds())
				if k == 0 {
					total++
					if in {
						inside++
					}
					errs = append(errs, e)
					signed = append(signed, s.Median.Sub(truly[j]).Seconds())
				} else {
					signedBlind = append(signedBlind, s.Median.Sub(truly[j]).Seconds())
					if in {
						insideBlind++
					}
					errsBlind = append(errsBlind, e)
				}
			}
		}
	}
	slices.Sort(errs)
	slices.Sort(errsBlind)
	slices.Sort(signed)
	slices.Sort(signedBlind)
	cov, covBlind := float64(inside)/float64(total), float64(insideBlind)/float64(total)
	med, medBlind := errs[len(errs)/2], errsBlind[len(errsBlind)/2]
	t.Logf("with arrivals: %.1f%% of %d starts within range, median error %.1f s (signed %+.1f); blind to them: %.1f%%, %.1f s (%+.1f); %d of %d trials' streams taken to have stopped",
		100*cov, total, med, signed[len(signed)/2], 100*covBlind, medBlind, signedBlind[len(signedBlind)/2], quiet, trials)
	if math.Abs(cov-Coverage) > 0.05 {
		t.Errorf("%.1f%% of the true starts fell within the range, want %.0f%% ± 5", 100*cov, 100*Coverage)
	}
	if med >= medBlind {
		t.Errorf("median error %.1f s with arrivals, %.1f s blind to them: want smaller", med, medBlind)
	}
	if bias, blindBias := signed[len(signed)/2], signedBlind[len(signedBlind)/2]; blindBias >= 0 || math.Abs(bias) > math.Abs(blindBias)/2 {
		t.Errorf("median signed error %+.1f s with arrivals, %+.1f s blind to them: want the blind one early, and this one within half of it", bias, blindBias)
	}
}

// A pod that never fits is not waited for by a run that creates pods: once the pods
// asked about wait for nothing that ends bring, it stops creating them, and the pod is
// unknown for its own reason, not capped by the pods created.
func TestArrivalsStopForHopelessPods(t *testing.T) {
	w := world([]quota.Budget{budget("team-a", "a", "cpu=2")},
		[]Pod{running("team-a", "long", "cpu=1", runs(10*time.Hour))},
		[]Pod{waiting(podIn("team-a", "huge", 0, "cpu=10"), runs(time.Minute))})
	tmpl := view(podIn("team-a", "etl", 0, "cpu=1").Priority(1000).Gated())
	tmpl.Name, tmpl.UID = "", ""
	w.Arrivals = []Stream{{
		Key:      ArrivalKey{Namespace: "team-a", OwnerKind: "Job", Owner: "etl", Priority: 1000},
		Template: tmpl, Expect: learnedRuns(20*time.Second, 30*time.Second, 40*time.Second),
		Gap: time.Minute, Span: 5 * time.Hour, Gaps: 300, Pods: 1, Until: t0.Add(5 * time.Hour),
	}}
	steps := 0
	s := Simulate(w, Options{afterAdmit: func(*quota.AdmissionQueue) { steps++ }})[0]
	if s.Known || s.Unknown != UnknownNeverFits {
		t.Errorf("huge: %+v, want unknown: NeverFits", s)
	}
	// Each of the 19 draws creates quietMoments moments' pods, then looks and stops.
	if most := 19 * (2*quietMoments + 2); steps > most {
		t.Errorf("%d simulated moments over the draws, want at most %d: the runs went on creating pods", steps, most)
	}
}
