package app

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// teamsWorld is the cluster the command tests look at: two opted-in teams under one
// ClusterBudget, and a namespace that is not opted in. At t0+5m the manager admitted
// what fit; the plugin runs at t0+10m.
//
//	ClusterBudget org        requests.cpu 8
//	  Budget team-a/team-a   requests.cpu 4, pods 10
//	  Budget team-b/team-b   requests.cpu 4
func teamsWorld(t *testing.T) *world {
	t.Helper()
	return newWorld(t, t0.Add(5*time.Minute),
		[]*corev1.Namespace{namespace("team-a", true), namespace("team-b", true), namespace("legacy", false)},
		[]*v1alpha1.Budget{
			budget("team-a", "team-a", "requests.cpu=4,pods=10", "org"),
			budget("team-b", "team-b", "requests.cpu=4", "org"),
		},
		[]*v1alpha1.ClusterBudget{clusterBudget("org", "requests.cpu=8", nil)},
		[]*corev1.Pod{
			// Running since before team-a opted in: it counts, and was never gated.
			makePod("team-a", "web").Req("cpu=2").Ungated().Obj(),
			makePod("team-a", "train-hi").Priority(1000).Req("cpu=1").Created(60).Obj(),
			makePod("team-a", "train-1").Req("cpu=2").Created(120).Obj(),
			makePod("team-a", "train-2").Req("cpu=1").Created(180).Obj(),
			makePod("team-a", "train-3").Req("cpu=1").Created(240).Obj(),
			makePod("team-a", "huge").Req("cpu=6").Created(30).Obj(),
			makePod("team-b", "batch-1").Req("cpu=3").Created(30).Obj(),
			makePod("team-b", "batch-2").Priority(500).Req("cpu=1").Created(90).Obj(),
			makePod("team-b", "batch-3").Req("cpu=2").Created(100).Obj(),
			makePod("legacy", "cron").Req("cpu=1").Ungated().Obj(),
		})
}
