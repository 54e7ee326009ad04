package charts_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kustomizeBuild runs `kubectl kustomize` on a directory of config/, as a user without Helm
// would, and decodes its output. kubectl is part of the development machine; a missing
// kubectl fails the test rather than skipping it.
func kustomizeBuild(t testing.TB, dir string) manifests {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed to build %s with kustomize: %v", dir, err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", filepath.Join(repoRoot(t), dir))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	objs, err := decodeAll(stdout.String())
	if err != nil {
		t.Fatalf("decoding kubectl kustomize %s: %v", dir, err)
	}
	return manifests{Objects: objs}
}

// configWebhook is the MutatingWebhookConfiguration that config/default installs.
func configWebhook(t testing.TB) admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	into(t, kustomizeBuild(t, "config/default").find(t, "MutatingWebhookConfiguration", ""), &mwc)
	if len(mwc.Webhooks) != 1 {
		t.Fatalf("config/default: want one webhook, got %d", len(mwc.Webhooks))
	}
	return mwc
}

func configMatchConditions(t testing.TB) []admissionregistrationv1.MatchCondition {
	t.Helper()
	return configWebhook(t).Webhooks[0].MatchConditions
}

var _ = unstructured.Unstructured{}
