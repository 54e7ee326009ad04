package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// The PodsNeverFit condition names the pods that request more than hard and those that
// leave unset a value hard tracks, the latter in ResourceQuota's words; its reason is
// MustSpecifyResources only when every pod listed is of the second kind.
func TestPodsNeverFitCondition(t *testing.T) {
	huge := quota.NeverFitPod{Pod: quota.PodRef{Namespace: "team-a", Name: "huge"}, Resource: "requests.cpu",
		Requested: resource.MustParse("8"), Hard: resource.MustParse("4")}
	bestEffort := quota.NeverFitPod{Pod: quota.PodRef{Namespace: "team-a", Name: "be"}, Resource: "requests.memory",
		Unset: "must specify requests.memory for: app"}
	member := quota.NeverFitPod{Pod: quota.PodRef{Namespace: "team-a", Name: "w-0"}, Group: "train", Resource: "limits.cpu",
		Unset: "must specify limits.cpu for: main", Member: "w-1"}
	tests := map[string]struct {
		pods        []quota.NeverFitPod
		ns          string // the budget's namespace; "" for a ClusterBudget
		wantReason  string
		wantMessage string
	}{
		"requests over hard": {
			pods:        []quota.NeverFitPod{huge},
			ns:          "team-a",
			wantReason:  v1alpha1.ReasonRequestsExceedHard,
			wantMessage: "pod team-a/huge requests 8 requests.cpu, more than hard 4: they stay gated until hard is raised or they are deleted",
		},
		"unset values only": {
			pods:       []quota.NeverFitPod{bestEffort, member},
			ns:         "team-a",
			wantReason: v1alpha1.ReasonMustSpecifyResources,
			wantMessage: "pod team-a/be must specify requests.memory for: app; group train (pod team-a/w-0): member w-1 must specify limits.cpu for: main: " +
				"as in ResourceQuota, every container must set the cpu and memory values hard tracks; they stay gated until hard stops tracking them or they are deleted",
		},
		"both": {
			pods:        []quota.NeverFitPod{bestEffort, huge},
			ns:          "team-a",
			wantReason:  v1alpha1.ReasonRequestsExceedHard,
			wantMessage: "pod team-a/be must specify requests.memory for: app; pod team-a/huge requests 8 requests.cpu, more than hard 4: they stay gated until hard is raised or they are deleted",
		},
		// A ClusterBudget's condition is read by whoever may see cluster-wide limits: it
		// names neither the pods nor the group's members.
		"unset values, ClusterBudget": {
			pods:       []quota.NeverFitPod{bestEffort, member},
			wantReason: v1alpha1.ReasonMustSpecifyResources,
			wantMessage: "a pod must specify requests.memory for: app; a group must specify limits.cpu for: main: " +
				"as in ResourceQuota, every container must set the cpu and memory values hard tracks; they stay gated until hard stops tracking them or they are deleted",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var status v1alpha1.BudgetStatus
			applyStatus(&status, quota.BudgetStatus{State: v1alpha1.StateOpen, NeverFit: tc.pods}, tc.ns, 1, metav1.Now())
			c := apimeta.FindStatusCondition(status.Conditions, v1alpha1.ConditionPodsNeverFit)
			if c == nil || c.Status != metav1.ConditionTrue {
				t.Fatalf("PodsNeverFit = %+v, want True", c)
			}
			if diff := cmp.Diff([]string{tc.wantReason, tc.wantMessage}, []string{c.Reason, c.Message}); diff != "" {
				t.Errorf("reason and message (-want +got):\n%s", diff)
			}
		})
	}
}
