package localinstall

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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
---
apiVersion: v1
kind: Service
metadata:
  name: quotagate-visibility
  labels: {app.kubernetes.io/component: visibility}
spec:
  type: ClusterIP
  selector: {app.kubernetes.io/component: manager}
  ports: [{name: visibility, port: 443, targetPort: visibility, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata:
  name: quotagate-webhook
  labels: {app.kubernetes.io/component: webhook}
spec:
  type: ClusterIP
  ports: [{name: https, port: 443, targetPort: webhook}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1alpha1.visibility.quotagate.io
spec:
  group: visibility.quotagate.io
  service: {name: quotagate-visibility, namespace: quotagate-system, port: 443}
`

func TestLocalRenderer(t *testing.T) {
	out, err := localRenderer{webhookHost: "127.0.0.1:9443", visibilityPort: 18443}.Run(bytes.NewBufferString(rendered))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 6 {
		t.Fatalf("got %d objects, want 6", len(objs))
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

	// The visibility API's Service names localhost on the stand-in's port, and the
	// APIService that port; the webhook's Service (not reached through the aggregator)
	// is left alone.
	var vis, hook corev1.Service
	for o, into := range map[*unstructured.Unstructured]*corev1.Service{objs[3]: &vis, objs[4]: &hook} {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
			t.Fatal(err)
		}
	}
	wantVisibility := corev1.ServiceSpec{
		Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
		Ports: []corev1.ServicePort{{Name: "visibility", Port: 18443, Protocol: corev1.ProtocolTCP}},
	}
	if diff := cmp.Diff(wantVisibility, vis.Spec); diff != "" {
		t.Errorf("visibility Service spec (-want +got):\n%s", diff)
	}
	if hook.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("the webhook's Service became %q, want it left ClusterIP", hook.Spec.Type)
	}
	port, _, _ := unstructured.NestedFieldNoCopy(objs[5].Object, "spec", "service", "port")
	name, _, _ := unstructured.NestedString(objs[5].Object, "spec", "service", "name")
	if fmt.Sprint(port) != "18443" || name != "quotagate-visibility" {
		t.Errorf("APIService spec.service names %s port %v, want quotagate-visibility port 18443", name, port)
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
