package localinstall

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const rendered = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: quotagate-webhook
  annotations:
    cert-manager.io/inject-ca-from: quotagate-system/quotagate-webhook-cert
webhooks:
- name: gate.quotagate.io
  clientConfig:
    service: {name: quotagate-webhook, namespace: quotagate-system, path: /mutate-v1-pod, port: 443}
  failurePolicy: Fail
---
apiVersion: batch/v1
kind: Job
metadata:
  name: quotagate-release-gated-pods
  annotations: {helm.sh/hook: pre-delete}
spec:
  template:
    metadata:
      labels: {app: x}
    spec:
      containers: [{name: release, image: q, command: [/manager], args: [release, --all]}]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: not-a-hook
spec:
  template:
    spec:
      containers: [{name: c, image: q}]
`

func TestLocalRenderer(t *testing.T) {
	out, err := localRenderer{webhookHost: "127.0.0.1:9443"}.Run(bytes.NewBufferString(rendered))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 {
		t.Fatalf("got %d objects, want 3", len(objs))
	}

	hooks, _, _ := unstructured.NestedSlice(objs[0].Object, "webhooks")
	wantHooks := []any{map[string]any{
		"name":          "gate.quotagate.io",
		"clientConfig":  map[string]any{"url": "https://127.0.0.1:9443/mutate-v1-pod"},
		"failurePolicy": "Fail",
	}}
	if diff := cmp.Diff(wantHooks, hooks); diff != "" {
		t.Errorf("webhooks (-want +got):\n%s", diff)
	}
	if got := objs[0].GetAnnotations()[injectCAFromAnnotation]; got != "quotagate-system/quotagate-webhook-cert" {
		t.Errorf("inject-ca-from annotation = %q, want it kept", got)
	}

	ann, _, _ := unstructured.NestedStringMap(objs[1].Object, "spec", "template", "metadata", "annotations")
	wantAnn := map[string]string{
		kwokCreateDelay: "0s", kwokCreateJitterDelay: "0s",
		kwokReadyDelay: "0s", kwokReadyJitterDelay: "0s",
		kwokCompleteDelay: kwokNever, kwokCompleteJitterDelay: kwokNever,
	}
	if diff := cmp.Diff(wantAnn, ann); diff != "" {
		t.Errorf("hook pod annotations (-want +got):\n%s", diff)
	}
	if _, found, _ := unstructured.NestedMap(objs[2].Object, "spec", "template", "metadata"); found {
		t.Errorf("a Job that is not a hook was changed: %v", objs[2].Object)
	}
}

func TestWithFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		set  map[string]string
		want []string
	}{
		"replaces in place": {
			args: []string{"--port=9443", "--zap-log-level=info"},
			set:  map[string]string{"port": "1234"},
			want: []string{"--port=1234", "--zap-log-level=info"},
		},
		"appends missing flags in name order": {
			args: []string{"--leader-elect=true"},
			set:  map[string]string{"host": "127.0.0.1", "cert-dir": "/d"},
			want: []string{"--leader-elect=true", "--cert-dir=/d", "--host=127.0.0.1"},
		},
		"keeps positional arguments and other flags": {
			args: []string{"release", "--all", "--metrics-bind-address=:8080"},
			set:  map[string]string{"metrics-bind-address": "127.0.0.1:1"},
			want: []string{"release", "--all", "--metrics-bind-address=127.0.0.1:1"},
		},
		"a flag whose name only starts like an override is kept": {
			args: []string{"--portable=yes"},
			set:  map[string]string{"port": "1"},
			want: []string{"--portable=yes", "--port=1"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, withFlags(tc.args, tc.set)); diff != "" {
				t.Errorf("withFlags (-want +got):\n%s", diff)
			}
		})
	}
}
