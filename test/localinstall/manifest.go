package localinstall

import (
	"bytes"
	"fmt"
	"path"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/quotagate/quotagate/tools/chartrender"
)

// The kwok annotations that set how long a bound pod takes to be initialised, to reach
// Running and to complete (see kwok's pod-create, pod-ready and pod-complete stages). A stage's jitter is an upper bound:
// with only a delay set, the stage's default jitter (5 s) would win, so both are set.
const (
	kwokCreateDelay         = "pod-create.stage.kwok.x-k8s.io/delay"
	kwokCreateJitterDelay   = "pod-create.stage.kwok.x-k8s.io/jitter-delay"
	kwokReadyDelay          = "pod-ready.stage.kwok.x-k8s.io/delay"
	kwokReadyJitterDelay    = "pod-ready.stage.kwok.x-k8s.io/jitter-delay"
	kwokCompleteDelay       = "pod-complete.stage.kwok.x-k8s.io/delay"
	kwokCompleteJitterDelay = "pod-complete.stage.kwok.x-k8s.io/jitter-delay"
)

// kwokNever is a run time kwok never reaches: the hook pod's outcome comes from the
// process Uninstall runs, not from kwok.
const kwokNever = "87600h"

// hookAnnotation marks a Helm hook.
const hookAnnotation = "helm.sh/hook"

// Components of the chart, as in its app.kubernetes.io/component labels.
const (
	componentLabel = "app.kubernetes.io/component"
	webhookName    = "webhook"
	managerName    = "manager"
	// visibilityName labels the visibility API's Service.
	visibilityName = "visibility"
)

// decodeObjects splits a multi-document YAML stream into objects; empty documents are
// dropped.
func decodeObjects(stream []byte) ([]*unstructured.Unstructured, error) {
	objs, err := chartrender.DecodeAll(string(stream))
	if err != nil {
		return nil, fmt.Errorf("decoding manifest: %w", err)
	}
	return objs, nil
}

// encodeObjects is the inverse of decodeObjects.
func encodeObjects(objs []*unstructured.Unstructured) ([]byte, error) {
	var b bytes.Buffer
	for _, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("encoding %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}

// localRenderer is the Helm post-renderer that adapts the chart to processes on this
// machine and to kwok nodes (see the package comment). It changes nothing else.
type localRenderer struct {
	// webhookHost is host:port of the local webhook process.
	webhookHost string
	// visibilityPort is the port on localhost of the stand-in for the visibility
	// API's Service.
	visibilityPort int64
}

// Run implements helm's postrenderer.PostRenderer.
func (r localRenderer) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	objs, err := decodeObjects(rendered.Bytes())
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		switch o.GroupVersionKind().GroupKind().String() {
		case "MutatingWebhookConfiguration.admissionregistration.k8s.io":
			if err := pointWebhooksAt(o, r.webhookHost); err != nil {
				return nil, err
			}
		case "Service":
			if o.GetLabels()[componentLabel] == visibilityName {
				if err := pointServiceAtLocalhost(o, r.visibilityPort); err != nil {
					return nil, err
				}
			}
		case "APIService.apiregistration.k8s.io":
			if err := unstructured.SetNestedField(o.Object, r.visibilityPort, "spec", "service", "port"); err != nil {
				return nil, fmt.Errorf("APIService %s: %w", o.GetName(), err)
			}
		case "Job.batch":
			if _, ok := o.GetAnnotations()[hookAnnotation]; ok {
				if err := holdHookPods(o); err != nil {
					return nil, err
				}
			}
		}
	}
	out, err := encodeObjects(objs)
	if err != nil {
		return nil, err
	}
	return bytes.NewBuffer(out), nil
}

// pointWebhooksAt replaces each webhook's clientConfig.service with the URL of the
// local process, keeping the service's path. This stands in for the in-cluster Service,
// which the API server cannot use to reach a process on 127.0.0.1.
func pointWebhooksAt(mwc *unstructured.Unstructured, host string) error {
	hooks, _, err := unstructured.NestedSlice(mwc.Object, "webhooks")
	if err != nil {
		return fmt.Errorf("webhooks of %s: %w", mwc.GetName(), err)
	}
	for i, h := range hooks {
		hook, ok := h.(map[string]any)
		if !ok {
			return fmt.Errorf("webhook %d of %s is not an object", i, mwc.GetName())
		}
		svc, found, err := unstructured.NestedMap(hook, "clientConfig", "service")
		if err != nil || !found {
			continue
		}
		p, _ := svc["path"].(string)
		unstructured.RemoveNestedField(hook, "clientConfig", "service")
		if err := unstructured.SetNestedField(hook, "https://"+host+path.Join("/", p), "clientConfig", "url"); err != nil {
			return err
		}
		hooks[i] = hook
	}
	return unstructured.SetNestedSlice(mwc.Object, hooks, "webhooks")
}

// pointServiceAtLocalhost turns the visibility API's Service into an ExternalName
// Service for localhost on port, where the local stand-in listens (service.go). The
// aggregation layer dials an ExternalName Service's name on the APIService's port (which
// the post-renderer sets to the same port) and still checks the serving certificate for
// <service>.<namespace>.svc, so the certificate the chart asks for is what gets tested.
// A ClusterIP would need kube-proxy, which the local control plane does not run.
func pointServiceAtLocalhost(svc *unstructured.Unstructured, port int64) error {
	spec := map[string]any{
		"type":         "ExternalName",
		"externalName": "localhost",
		"ports":        []any{map[string]any{"name": visibilityName, "port": port, "protocol": "TCP"}},
	}
	return unstructured.SetNestedMap(svc.Object, spec, "spec")
}

// holdHookPods tells kwok to bring a hook Job's pods to Running at once and never to
// complete them: Uninstall runs their command and reports the outcome.
func holdHookPods(job *unstructured.Unstructured) error {
	ann, _, err := unstructured.NestedStringMap(job.Object, "spec", "template", "metadata", "annotations")
	if err != nil {
		return fmt.Errorf("pod annotations of Job %s: %w", job.GetName(), err)
	}
	if ann == nil {
		ann = map[string]string{}
	}
	ann[kwokCreateDelay], ann[kwokCreateJitterDelay] = "0s", "0s"
	ann[kwokReadyDelay], ann[kwokReadyJitterDelay] = "0s", "0s"
	ann[kwokCompleteDelay], ann[kwokCompleteJitterDelay] = kwokNever, kwokNever
	return unstructured.SetNestedStringMap(job.Object, ann, "spec", "template", "metadata", "annotations")
}

// deployment returns the release's Deployment of a component (by its
// app.kubernetes.io/component label).
func deployment(objs []*unstructured.Unstructured, component string) (*appsv1.Deployment, error) {
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetLabels()[componentLabel] != component {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			return nil, fmt.Errorf("decoding Deployment %s: %w", o.GetName(), err)
		}
		if len(d.Spec.Template.Spec.Containers) == 0 {
			return nil, fmt.Errorf("deployment %s has no container", d.Name)
		}
		return &d, nil
	}
	return nil, fmt.Errorf("the release has no Deployment with label %s=%s", componentLabel, component)
}

// find returns the one object of the release with this group and kind.
func find(objs []*unstructured.Unstructured, group, kind string) (*unstructured.Unstructured, error) {
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if gk := o.GroupVersionKind().GroupKind(); gk.Group == group && gk.Kind == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("want exactly one %s.%s in the release, found %d", kind, group, len(found))
	}
	return found[0], nil
}

// nameOf is the name of the release's one object with this group and kind, "" when it
// has none.
func nameOf(objs []*unstructured.Unstructured, group, kind string) string {
	if o, err := find(objs, group, kind); err == nil {
		return o.GetName()
	}
	return ""
}

// withFlags returns args with each flag in set given the value in set: replaced in
// place where args has it as --name=value (the chart's form), appended in name order
// where it does not. Other arguments are kept as they are.
func withFlags(args []string, set map[string]string) []string {
	out := make([]string, 0, len(args)+len(set))
	seen := map[string]bool{}
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		v, override := set[name]
		if !strings.HasPrefix(a, "-") || !override {
			out = append(out, a)
			continue
		}
		seen[name] = true
		out = append(out, "--"+name+"="+v)
	}
	var missing []string
	for name := range set {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	for _, name := range missing {
		out = append(out, "--"+name+"="+set[name])
	}
	return out
}

// flagValue returns the value of --name in args ("--name=value" form), or "".
func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}
