package chartrender

import (
	"strings"
	"testing"
)

const chartDir = "../../charts/quotagate"

var cluster = Cluster{KubeVersion: "v1.37.2"}

func TestRenderSplitsObjectsHooksAndNotes(t *testing.T) {
	r, err := Render(chartDir, "quotagate", "quotagate-system", cluster, nil)
	if err != nil {
		t.Fatal(err)
	}
	has := func(objs []string, want string) bool {
		for _, o := range objs {
			if o == want {
				return true
			}
		}
		return false
	}
	var objects, hooks []string
	for _, o := range r.Objects {
		objects = append(objects, o.GetKind()+"/"+o.GetName())
	}
	for _, o := range r.Hooks {
		hooks = append(hooks, o.GetKind()+"/"+o.GetName())
	}
	if !has(objects, "Deployment/quotagate-manager") {
		t.Errorf("objects lack the manager Deployment: %v", objects)
	}
	if !has(hooks, "Job/quotagate-release-gated-pods") || has(objects, "Job/quotagate-release-gated-pods") {
		t.Errorf("the pre-delete Job is not a hook alone: objects %v, hooks %v", objects, hooks)
	}
	if !strings.Contains(r.Notes, "quotagate") {
		t.Errorf("notes: %q", r.Notes)
	}
}

func TestRenderRefusesAValueTheSchemaRefuses(t *testing.T) {
	_, err := Render(chartDir, "quotagate", "quotagate-system", cluster, map[string]any{"webhook": map[string]any{"replicas": -1}})
	if err == nil || !strings.Contains(err.Error(), "replicas") {
		t.Errorf("err = %v, want the schema's complaint about webhook.replicas", err)
	}
}

func TestRenderRefusesABadKubeVersion(t *testing.T) {
	if _, err := Render(chartDir, "quotagate", "quotagate-system", Cluster{KubeVersion: "one"}, nil); err == nil {
		t.Error("rendered for kube version \"one\"")
	}
}
