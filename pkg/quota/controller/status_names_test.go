package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotagate/quotagate/pkg/quota"
)

// TestNeverFitMessageNamesOnlyItsNamespace: a Budget's PodsNeverFit condition names its
// own namespace's pods; a ClusterBudget's, read by whoever may see cluster-wide limits,
// names none.
func TestNeverFitMessageNamesOnlyItsNamespace(t *testing.T) {
	pods := []quota.NeverFitPod{
		{Pod: quota.PodRef{Namespace: "team-b", Name: "secret-project-x-trainer"}, Resource: "requests.nvidia.com/gpu", Requested: resource.MustParse("8"), Hard: resource.MustParse("4")},
		{Pod: quota.PodRef{Namespace: "team-b", Name: "w-0"}, Group: "allreduce", Resource: "requests.cpu", Requested: resource.MustParse("64"), Hard: resource.MustParse("32")},
	}
	for ns, want := range map[string]string{
		"team-b": "pod team-b/secret-project-x-trainer requests 8 requests.nvidia.com/gpu, more than hard 4; group allreduce (pod team-b/w-0) requests 64 requests.cpu, more than hard 32: they stay gated until hard is raised or they are deleted",
		"":       "a pod requests 8 requests.nvidia.com/gpu, more than hard 4; a group requests 64 requests.cpu, more than hard 32: they stay gated until hard is raised or they are deleted",
	} {
		if got := neverFitMessage(pods, ns); got != want {
			t.Errorf("for namespace %q:\n got %s\nwant %s", ns, got, want)
		}
	}
}
