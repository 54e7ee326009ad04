package controller

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/quota"
)

// A pod that waits for a Secret, under a manager that does not watch Secrets, is told
// that it never will be ready, and why; one that watches them waits for it to exist.
func TestSecretDependencyNeedsWatchSecrets(t *testing.T) {
	pod := podtest.New("reader").NS("team-a").UID("reader").Gated().Container("c", "").
		Annotation(v1alpha1.WaitForAnnotation, "secret/creds, configmap/settings").Obj()
	view := func(watch bool, objects ...any) *quota.PodDependencies {
		c := &Controller{dependencies: newDependencyIndex()}
		c.dependencies.watchSecrets = watch
		for _, o := range objects {
			c.onDependencyObject(o, false)
		}
		cp := compactPod(pod)
		return c.dependencies.view(cp.view, waitsOf(cp.view, cp)).Dependencies
	}
	settings := metadataOnly("ConfigMap")
	settings.ObjectMeta = metav1.ObjectMeta{Namespace: "team-a", Name: "settings"}
	if d := view(false, settings); d.Wait != quota.CodeDependencyFailed ||
		d.Message != "Secret creds: this quotagate does not watch Secrets (the manager's --watch-secrets, the chart's manager.watchSecrets)" {
		t.Errorf("without WatchSecrets: %+v", d)
	}
	if d := view(true, settings); d.Wait != quota.CodeDependencyPending || d.Message != "waiting for Secret creds, which does not exist yet" {
		t.Errorf("with WatchSecrets: %+v", d)
	}
	creds := metadataOnly("Secret")
	creds.ObjectMeta = metav1.ObjectMeta{Namespace: "team-a", Name: "creds"}
	if d := view(true, settings, creds); d.Holds() {
		t.Errorf("with both: %+v", d)
	}
}

// The CompositePodGroups above a PodGroup: read up to the root, a missing one ends
// the path (its pods wait for it), and a cycle or a path deeper than Kubernetes
// allows is a problem that holds the pods.
func TestPodGroupInfoWalksCompositePodGroups(t *testing.T) {
	x := newDependencyIndex()
	x.podGroups[podGroupKey("ns", "pg")] = groupRec{min: 2, parent: "mid"}
	x.composites[compositeKey("ns", "mid")] = groupRec{parent: "top"}
	x.composites[compositeKey("ns", "top")] = groupRec{min: 3}
	info := x.podGroupInfo("ns", "pg")
	want := []quota.CompositePodGroupInfo{{Name: "mid", Exists: true}, {Name: "top", Exists: true, MinGroupCount: 3}}
	if !info.Exists || info.MinCount != 2 || info.Problem != "" || !slices.Equal(info.Parents, want) {
		t.Errorf("podGroupInfo = %+v, want parents %+v", info, want)
	}
	delete(x.composites, compositeKey("ns", "top"))
	if info := x.podGroupInfo("ns", "pg"); len(info.Parents) != 2 || info.Parents[1].Exists {
		t.Errorf("with top gone, podGroupInfo = %+v, want top named and missing", info)
	}
	x.composites[compositeKey("ns", "top")] = groupRec{parent: "mid"}
	if info := x.podGroupInfo("ns", "pg"); !strings.Contains(info.Problem, "cycle") {
		t.Errorf("with a cycle, podGroupInfo = %+v", info)
	}
	x.composites[compositeKey("ns", "top")] = groupRec{parent: "a"}
	x.composites[compositeKey("ns", "a")] = groupRec{parent: "b"}
	x.composites[compositeKey("ns", "b")] = groupRec{}
	if info := x.podGroupInfo("ns", "pg"); !strings.Contains(info.Problem, "deeper than Kubernetes allows") {
		t.Errorf("4 CompositePodGroups deep, podGroupInfo = %+v", info)
	}
	if info := x.podGroupInfo("ns", "other"); info.Exists {
		t.Errorf("a PodGroup not seen exists: %+v", info)
	}
}
