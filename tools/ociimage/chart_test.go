package ociimage_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/quotagate/quotagate/tools/ociimage"
)

// TestChartValuesRunAsTheImageUser: the chart's podSecurityContext names the image's
// user and group, so runAsNonRoot holds and the files the image gives that user match.
func TestChartValuesRunAsTheImageUser(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "charts", "quotagate", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		PodSecurityContext corev1.PodSecurityContext `json:"podSecurityContext"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	uid, gid, ok := strings.Cut(ociimage.User, ":")
	if !ok || uid != strconv.Itoa(ociimage.UID) || gid != strconv.Itoa(ociimage.GID) || ociimage.UID == 0 {
		t.Fatalf("image user %q: want numeric, non-root %d:%d", ociimage.User, ociimage.UID, ociimage.GID)
	}
	sc := values.PodSecurityContext
	if sc.RunAsUser == nil || *sc.RunAsUser != ociimage.UID {
		t.Errorf("values.yaml podSecurityContext.runAsUser is %v, the image's user %d", deref(sc.RunAsUser), ociimage.UID)
	}
	if sc.RunAsGroup == nil || *sc.RunAsGroup != ociimage.GID {
		t.Errorf("values.yaml podSecurityContext.runAsGroup is %v, the image's group %d", deref(sc.RunAsGroup), ociimage.GID)
	}
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("values.yaml podSecurityContext.runAsNonRoot is not true")
	}
}

// TestChartRunsTheImage renders the chart with its defaults: every pod it makes (the
// Deployments and the uninstall hook's Job) runs a binary the image has, as its user,
// on a read-only root filesystem, which the image needs no write to.
func TestChartRunsTheImage(t *testing.T) {
	pods := renderPods(t)
	if len(pods) < 3 {
		t.Fatalf("the chart renders %d pod templates, want at least the webhook, the manager and the release hook", len(pods))
	}
	var paths []string
	for _, b := range ociimage.Binaries {
		paths = append(paths, b.Path)
	}
	for name, pod := range pods {
		sc := pod.SecurityContext
		if sc == nil || deref(sc.RunAsUser) != ociimage.UID || deref(sc.RunAsGroup) != ociimage.GID || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("%s: pod securityContext %+v, want runAsNonRoot as %d:%d", name, sc, ociimage.UID, ociimage.GID)
		}
		for _, c := range pod.Containers {
			if len(c.Command) == 0 || !slices.Contains(paths, c.Command[0]) {
				t.Errorf("%s: container %s runs %v, not one of the image's binaries %v", name, c.Name, c.Command, paths)
			}
			if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
				t.Errorf("%s: container %s does not set readOnlyRootFilesystem", name, c.Name)
			}
		}
	}
}

// renderPods renders the chart with its default values, as a client-side dry run, and
// returns the pod template of every workload, by "Kind/name".
func renderPods(t *testing.T) map[string]corev1.PodSpec {
	t.Helper()
	chrt, err := loader.Load(filepath.Join(repoRoot(t), "charts", "quotagate"))
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	inst := action.NewInstall(action.NewConfiguration())
	inst.DryRunStrategy = action.DryRunClient
	inst.ReleaseName, inst.Namespace = "quotagate", "quotagate-system"
	if inst.KubeVersion, err = common.ParseKubeVersion("v1.37.2"); err != nil {
		t.Fatal(err)
	}
	rel, err := inst.Run(chrt, map[string]any{})
	if err != nil {
		t.Fatalf("rendering the chart: %v", err)
	}
	r, ok := rel.(*release.Release)
	if !ok {
		t.Fatalf("unexpected release type %T", rel)
	}
	stream := r.Manifest
	for _, h := range r.Hooks {
		stream += "\n---\n" + h.Manifest
	}
	pods := map[string]corev1.PodSpec{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return pods
		} else if err != nil {
			t.Fatalf("decoding the rendered chart: %v", err)
		}
		u := &unstructured.Unstructured{Object: obj}
		if k := u.GetKind(); k != "Deployment" && k != "Job" {
			continue
		}
		var w struct {
			Spec struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &w); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		pods[u.GetKind()+"/"+u.GetName()] = w.Spec.Template.Spec
	}
}

func deref(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
