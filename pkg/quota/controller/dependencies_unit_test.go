package controller

import (
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
