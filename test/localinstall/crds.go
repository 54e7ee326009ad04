package localinstall

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// certManagerModule ships cert-manager's CRDs in deploy/crds; go.mod pins its version.
const certManagerModule = "github.com/cert-manager/cert-manager"

// fieldManager is the field manager of everything Install applies itself.
const fieldManager = "quotagate-localinstall"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// certManagerCRDs reads cert-manager's CRDs from the module cache, at the version
// go.mod requires. The files are plain YAML (no Helm template markers); a file that has
// them is refused rather than applied half-rendered.
func certManagerCRDs(ctx context.Context, repoRoot string) ([]*unstructured.Unstructured, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", certManagerModule)
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("finding module %s (go list -m): %w: %s", certManagerModule, err, stderr.String())
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s (err: %v)", dir, err)
	}
	var crds []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading cert-manager CRDs: %w", err)
		}
		if bytes.Contains(data, []byte("{{")) {
			return nil, fmt.Errorf("%s contains Helm template markers; only plain CRDs are supported", f)
		}
		objs, err := decodeObjects(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" {
				crds = append(crds, o)
			}
		}
	}
	return crds, nil
}

// installCertManagerCRDs applies cert-manager's CRDs (server-side) and waits until the
// API server serves every one of them.
func (i *Installation) installCertManagerCRDs(ctx context.Context) error {
	crds, err := certManagerCRDs(ctx, i.opts.RepoRoot)
	if err != nil {
		return err
	}
	res := i.dynamic.Resource(crdGVR)
	for _, crd := range crds {
		if _, err := res.Apply(ctx, crd.GetName(), crd, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			return fmt.Errorf("applying CRD %s: %w", crd.GetName(), err)
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := res.Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // keep polling; the timeout reports it
			}
			return conditionTrue(got, "Established"), nil
		})
		if err != nil {
			return fmt.Errorf("waiting for CRD %s to be established: %w", crd.GetName(), err)
		}
	}
	return nil
}

// conditionTrue reports whether obj's status.conditions has type typ with status True.
func conditionTrue(obj *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}
