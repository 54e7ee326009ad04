package estimate

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/quota"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestOwnerOf(t *testing.T) {
	for name, tc := range map[string]struct {
		pod        *podtest.Builder
		kind, want string
	}{
		"a Job's pods share the Job's name": {
			pod:  podtest.New("train-x7k2p").Owner("batch/v1", "Job", "train", true),
			kind: "Job", want: "train",
		},
		"a CronJob's Jobs share the CronJob's name": {
			pod:  podtest.New("nightly-29312640-abcde").Owner("batch/v1", "Job", "nightly-29312640", true),
			kind: "Job", want: "nightly",
		},
		"numbered Jobs are one workload: train-7 and train-8 are train": {
			pod:  podtest.New("train-7-x").Owner("batch/v1", "Job", "train-7", true),
			kind: "Job", want: "train",
		},
		"a numbered Job's generated suffix goes too": {
			pod:  podtest.New("p").Owner("batch/v1", "Job", "etl-12-x7k2p", true),
			kind: "Job", want: "etl",
		},
		"a name that is only a number is kept": {
			pod:  podtest.New("p").Owner("batch/v1", "Job", "2026", true),
			kind: "Job", want: "2026",
		},
		"a number inside the name is the user's": {
			pod:  podtest.New("p").Owner("batch/v1", "Job", "resnet50-eval", true),
			kind: "Job", want: "resnet50-eval",
		},
		"a ReplicaSet loses its pod-template-hash": {
			pod:  podtest.New("web-5d8f9c7b4-zq2xv").Owner("apps/v1", "ReplicaSet", "web-5d8f9c7b4", true).Label(podTemplateHashLabel, "5d8f9c7b4"),
			kind: "ReplicaSet", want: "web",
		},
		"a generated owner name loses its suffix": {
			pod:  podtest.New("p").Owner("batch/v1", "Job", "sweep-x7k2p", true),
			kind: "Job", want: "sweep",
		},
		"a word is not a generated suffix": {
			pod:  podtest.New("p").Owner("batch/v1", "Job", "model-batch", true),
			kind: "Job", want: "model-batch",
		},
		"a StatefulSet keeps its name": {
			pod:  podtest.New("db-0").Owner("apps/v1", "StatefulSet", "db", true),
			kind: "StatefulSet", want: "db",
		},
		"the controller is the owner, not the first reference": {
			pod:  podtest.New("p").Owner("v1", "ConfigMap", "cm", false).Owner("batch/v1", "Job", "train", true),
			kind: "Job", want: "train",
		},
		"a bare pod with generateName": {
			pod:  podtest.New("x").GenerateName("worker-"),
			kind: "Pod", want: "worker",
		},
		"a bare named pod": {
			pod:  podtest.New("worker-b2c4d"),
			kind: "Pod", want: "worker",
		},
		"numbered bare pods are one workload: etl-1 and etl-2 are etl": {
			pod:  podtest.New("etl-2"),
			kind: "Pod", want: "etl",
		},
		"a bare pod's numbered generateName": {
			pod:  podtest.New("x").GenerateName("etl-3-"),
			kind: "Pod", want: "etl",
		},
		"a ReplicaSet's numbered Deployment": {
			pod:  podtest.New("web-2-5d8f9c7b4-zq2xv").Owner("apps/v1", "ReplicaSet", "web-2-5d8f9c7b4", true).Label(podTemplateHashLabel, "5d8f9c7b4"),
			kind: "ReplicaSet", want: "web",
		},
	} {
		t.Run(name, func(t *testing.T) {
			kind, got := ownerOf(tc.pod.Obj())
			if kind != tc.kind || got != tc.want {
				t.Errorf("ownerOf = %s %q, want %s %q", kind, got, tc.kind, tc.want)
			}
		})
	}
}

func TestLearnerFallback(t *testing.T) {
	budget := quota.BudgetKey{Namespace: "team-a", Name: "gpu"}
	job := func(name string) []Key {
		return KeysOf(podtest.New("p").NS("team-a").Owner("batch/v1", "Job", name, true).Obj(), []quota.BudgetKey{budget})
	}
	other := KeysOf(podtest.New("p").NS("team-b").Obj(), []quota.BudgetKey{budget})
	record := func(l *Learner, keys []Key, minutes ...int) {
		for _, m := range minutes {
			l.Record(keys, time.Duration(m)*time.Minute)
		}
	}
	for name, tc := range map[string]struct {
		learn     func(l *Learner)
		ask       []Key
		want      Duration
		wantFound bool
	}{
		"nothing learned": {
			learn: func(*Learner) {},
			ask:   job("train"),
		},
		"the owner's own durations first": {
			learn:     func(l *Learner) { record(l, job("train"), 10, 20, 30); record(l, job("eval"), 1, 1, 1) },
			ask:       job("train"),
			want:      Duration{Median: 20 * time.Minute, Mean: 20 * time.Minute, Low: 10 * time.Minute, High: 30 * time.Minute, Samples: 3, Basis: "durations of 3 runs of Job team-a/train"},
			wantFound: true,
		},
		"too few of the owner's: the namespace's": {
			learn: func(l *Learner) { record(l, job("train"), 10, 20); record(l, job("eval"), 1, 2, 3) },
			ask:   job("train"),
			want: Duration{Median: 3 * time.Minute, Mean: 36 * time.Minute / 5, Low: widened(1*time.Minute, -namespaceSpread), High: widened(20*time.Minute, namespaceSpread),
				Samples: 5, Basis: "only 2 runs of Job team-a/train; durations of 5 runs of pods in namespace team-a", Level: LevelNamespace, Spread: namespaceSpread},
			wantFound: true,
		},
		"a new namespace: the budget's": {
			learn: func(l *Learner) { record(l, other, 4, 4, 5) },
			ask:   job("train"),
			want: Duration{Median: 4 * time.Minute, Mean: 13 * time.Minute / 3, Low: widened(4*time.Minute, -budgetSpread), High: widened(5*time.Minute, budgetSpread),
				Samples: 3, Basis: "no run of Job team-a/train yet; durations of 3 runs of pods in Budget team-a/gpu", Level: LevelBudget, Spread: budgetSpread},
			wantFound: true,
		},
		"the window keeps the last runs": {
			learn: func(l *Learner) {
				for range Window {
					record(l, job("train"), 100)
				}
				for range Window / 2 {
					record(l, job("train"), 1)
				}
			},
			ask:       job("train"),
			want:      Duration{Median: time.Minute, Mean: 101 * time.Minute / 2, Low: time.Minute, High: 100 * time.Minute, Samples: Window, Basis: "durations of 32 runs of Job team-a/train"},
			wantFound: true,
		},
		"non-positive durations teach nothing": {
			learn: func(l *Learner) { record(l, job("train"), 0, -1, 0) },
			ask:   job("train"),
		},
	} {
		t.Run(name, func(t *testing.T) {
			l := NewLearner(0)
			tc.learn(l)
			got, found := l.Estimate(tc.ask)
			if found != tc.wantFound {
				t.Fatalf("found = %v, want %v", found, tc.wantFound)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreUnexported(Duration{})); diff != "" {
				t.Errorf("Estimate (-want +got):\n%s", diff)
			}
		})
	}
}

// widened is d moved by a log-normal σ's 90th percentile: up for σ > 0, down for σ < 0.
func widened(d time.Duration, sigma float64) time.Duration {
	f := math.Exp(z90 * math.Abs(sigma))
	if sigma < 0 {
		return time.Duration(float64(d) / f)
	}
	return time.Duration(float64(d) * f)
}

// The Learner keeps at most maxKeys keys, the least recently recorded going first.
func TestLearnerBounded(t *testing.T) {
	l := NewLearner(6) // three pods' worth of owner + namespace keys
	keys := func(i int) []Key {
		return KeysOf(podtest.New("p").NS(fmt.Sprintf("ns-%d", i)).Owner("batch/v1", "Job", "j", true).Obj(), nil)
	}
	for i := range 3 {
		for range MinSamples {
			l.Record(keys(i), time.Minute)
		}
	}
	l.Record(keys(0), time.Minute) // ns-0 is now the most recent; ns-1 the least
	for i := 3; i < 100; i++ {
		if i == 3 {
			for range MinSamples {
				l.Record(keys(i), time.Minute)
			}
			if _, ok := l.Estimate(keys(1)); ok {
				t.Errorf("ns-1, recorded least recently, is still known after ns-3 came")
			}
			if _, ok := l.Estimate(keys(0)); !ok {
				t.Errorf("ns-0, recorded most recently, was dropped")
			}
			continue
		}
		l.Record(keys(i), time.Minute)
	}
	if l.Len() != 6 {
		t.Errorf("Len = %d, want the cap 6", l.Len())
	}
}

func TestObserve(t *testing.T) {
	ended := func(phase corev1.PodPhase) *podtest.Builder {
		b := podtest.New("p").NS("team-a").Phase(phase).
			Annotation("quotagate.io/admitted-at", t0.Format(time.RFC3339))
		b.Obj().Status.ContainerStatuses = []corev1.ContainerStatus{{
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metaTime(t0.Add(7 * time.Minute))}},
		}}
		return b
	}
	for name, tc := range map[string]struct {
		pod  *podtest.Builder
		want time.Duration // 0: learns nothing
	}{
		"succeeded: from admitted-at to the last container's end": {pod: ended(corev1.PodSucceeded), want: 7 * time.Minute},
		"failed pods held quota too":                              {pod: ended(corev1.PodFailed), want: 7 * time.Minute},
		"a running pod teaches nothing":                           {pod: ended(corev1.PodRunning)},
		"no container says: until now": {
			pod: func() *podtest.Builder {
				b := ended(corev1.PodSucceeded)
				b.Obj().Status.ContainerStatuses = nil
				return b
			}(),
			want: 9 * time.Minute,
		},
		"never started": {pod: podtest.New("p").NS("team-a").Phase(corev1.PodFailed)},
	} {
		t.Run(name, func(t *testing.T) {
			l := NewLearner(0)
			for range MinSamples {
				l.Observe(tc.pod.Obj(), nil, t0.Add(9*time.Minute))
			}
			got, ok := l.Estimate(KeysOf(tc.pod.Obj(), nil))
			if ok != (tc.want > 0) || got.Median != tc.want {
				t.Errorf("learned %v (%v), want %v", got.Median, ok, tc.want)
			}
		})
	}
}

// Compact facts of pods that differ only in their names are equal, and Expand gives
// each pod its own facts back.
func TestFactsCompact(t *testing.T) {
	for name, pod := range map[string]*podtest.Builder{
		"a bare pod":                       podtest.New("train-7").NS("team-a"),
		"a bare pod with a generated name": podtest.New("train-x7k2p").NS("team-a"),
		"a pod of generateName":            podtest.New("web-b5c2d").NS("team-a").GenerateName("web-"),
		"a Job's pod":                      podtest.New("train-q8z4w").NS("team-a").Owner("batch/v1", "Job", "train", true),
	} {
		t.Run(name, func(t *testing.T) {
			p := pod.Obj()
			f := FactsOf(p)
			if diff := cmp.Diff(f, f.Compact(p.Name).Expand(p.Name)); diff != "" {
				t.Errorf("Expand(Compact(f)) (-f +got):\n%s", diff)
			}
		})
	}
	a, b := FactsOf(podtest.New("alpha").NS("team-a").Obj()), FactsOf(podtest.New("beta").NS("team-a").Obj())
	if a == b || a.Compact("alpha") != b.Compact("beta") {
		t.Errorf("two bare pods' facts: %+v and %+v; compact, they should be equal", a, b)
	}
}
