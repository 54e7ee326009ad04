// Package api_test checks that the API module stays cheap to import: a program that
// writes Budgets from Go imports github.com/quotagate/quotagate/api/v1alpha1 and must not
// inherit quotagate's test and tool dependencies (Helm, Prometheus, cert-manager, cloud
// SDKs) through it. docs/api-module.md says why and how it is measured.
package api_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// directRequires are the only modules api/go.mod may require directly. Adding one is a
// choice every importer of the API pays for: make it here, on purpose.
var directRequires = []string{"k8s.io/api", "k8s.io/apimachinery"}

// linked are the modules whose packages a program importing every API package compiles
// in: the API's own and those apimachinery and k8s.io/api bring.
var linked = []string{
	"github.com/fxamacker/cbor/v2",
	"github.com/go-logr/logr",
	"github.com/json-iterator/go",
	"github.com/modern-go/concurrent",
	"github.com/modern-go/reflect2",
	"github.com/quotagate/quotagate/api",
	"github.com/x448/float16",
	"go.yaml.in/yaml/v2",
	"golang.org/x/net",
	"golang.org/x/text",
	"gopkg.in/inf.v0",
	"k8s.io/api",
	"k8s.io/apimachinery",
	"k8s.io/klog/v2",
	"k8s.io/kube-openapi",
	"k8s.io/utils",
	"sigs.k8s.io/json",
	"sigs.k8s.io/randfill",
	"sigs.k8s.io/structured-merge-diff/v6",
}

// forbidden are module path prefixes of the root module's heavy dependencies: none may
// appear anywhere in the API module's graph, not even unlinked.
var forbidden = []string{
	"helm.sh/", "github.com/prometheus/", "github.com/cert-manager/", "github.com/google/go-containerregistry",
	"sigs.k8s.io/controller-runtime", "sigs.k8s.io/kustomize/", "k8s.io/client-go", "k8s.io/apiserver",
	"k8s.io/apiextensions-apiserver", "k8s.io/kube-aggregator", "k8s.io/cli-runtime",
	"cloud.google.com/", "github.com/Azure/", "github.com/aws/", "go.opentelemetry.io/", "google.golang.org/grpc",
}

// maxGraph bounds `go list -m all`, the module graph an importer inherits (66 when this
// test was written, against about 237 through the root module).
const maxGraph = 90

func TestAPIModuleRequiresOnlyAPIMachinery(t *testing.T) {
	var mod struct {
		Module  struct{ Path string }
		Require []struct {
			Path     string
			Indirect bool
		}
	}
	if err := json.Unmarshal(goCmd(t, "mod", "edit", "-json"), &mod); err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	if mod.Module.Path != "github.com/quotagate/quotagate/api" {
		t.Fatalf("api/go.mod declares module %q, want github.com/quotagate/quotagate/api", mod.Module.Path)
	}
	var direct []string
	for _, r := range mod.Require {
		if !r.Indirect {
			direct = append(direct, r.Path)
		}
	}
	slices.Sort(direct)
	if !slices.Equal(direct, directRequires) {
		t.Errorf("api/go.mod requires directly %v, want only %v: every program that imports the API would build them", direct, directRequires)
	}
}

func TestAPIPackagesLinkOnlyAPIMachinery(t *testing.T) {
	var extra []string
	for m := range strings.Lines(string(goCmd(t, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "./..."))) {
		m = strings.TrimSpace(m)
		if m != "" && !slices.Contains(linked, m) && !slices.Contains(extra, m) {
			extra = append(extra, m)
		}
	}
	if len(extra) > 0 {
		t.Errorf("the API packages now compile in modules %v beyond apimachinery's and k8s.io/api's: keep the API free of them, or add them to linked on purpose", extra)
	}
}

func TestAPIModuleGraphHasNoHeavyDependency(t *testing.T) {
	var all []string
	for m := range strings.Lines(string(goCmd(t, "list", "-m", "-f", "{{.Path}}", "all"))) {
		if m = strings.TrimSpace(m); m != "" {
			all = append(all, m)
		}
	}
	for _, m := range all {
		for _, f := range forbidden {
			if strings.HasPrefix(m, f) {
				t.Errorf("the API module's graph holds %s: an importer of the API would inherit it", m)
			}
		}
	}
	if len(all) > maxGraph {
		t.Errorf("the API module's graph (go list -m all) has %d modules, more than %d: what brought the new ones?", len(all), maxGraph)
	}
}

// goCmd runs the go command in the API module's directory (the test's working directory)
// without letting it edit go.mod.
func goCmd(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}
