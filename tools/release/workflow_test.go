package release_test

import (
	"os"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// The release workflow runs on a v* tag, sets Go up from go.mod, and runs `make release`
// with the tag as VERSION before anything is published.
func TestReleaseWorkflow(t *testing.T) {
	b, err := os.ReadFile("../../.github/workflows/release.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		On struct {
			Push struct {
				Tags []string `yaml:"tags"`
			} `yaml:"push"`
		} `yaml:"on"`
		Jobs map[string]struct {
			Steps []struct {
				Name string            `yaml:"name"`
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	// YAML 1.2, as GitHub reads it: "on" is a key, not the boolean YAML 1.1 makes of it.
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("release.yaml: %v", err)
	}
	if strings.Join(wf.On.Push.Tags, ",") != "v*" {
		t.Errorf("release.yaml runs on tags %v, want v*", wf.On.Push.Tags)
	}
	job, ok := wf.Jobs["release"]
	if !ok {
		t.Fatalf("release.yaml has no job release")
	}
	step := func(match func(run, uses string) bool) int {
		for i, s := range job.Steps {
			if match(s.Run, s.Uses) {
				return i
			}
		}
		return -1
	}
	checkout := step(func(_, uses string) bool { return strings.HasPrefix(uses, "actions/checkout@") })
	setupGo := step(func(_, uses string) bool { return strings.HasPrefix(uses, "actions/setup-go@") })
	makeRelease := step(func(run, _ string) bool {
		return strings.Contains(run, "make release VERSION=${{ github.ref_name }}")
	})
	// The layout `make image` writes (IMAGE_LAYOUT), pushed as its one index, not wrapped.
	crane := step(func(run, _ string) bool {
		return strings.Contains(run, "crane push _output/image/oci ") && !strings.Contains(run, "--index")
	})
	ghRelease := step(func(run, _ string) bool { return strings.Contains(run, "gh release create") })
	if checkout < 0 || setupGo < 0 || makeRelease < 0 || crane < 0 || ghRelease < 0 {
		t.Fatalf("release.yaml steps: checkout %d, setup-go %d, make release with the tag %d, crane push %d, gh release create %d (-1 is missing)",
			checkout, setupGo, makeRelease, crane, ghRelease)
	}
	if inOrder := checkout < setupGo && setupGo < makeRelease && makeRelease < crane && makeRelease < ghRelease; !inOrder {
		t.Errorf("release.yaml must check out, set Go up, run make release, then publish; got steps %d %d %d %d %d",
			checkout, setupGo, makeRelease, crane, ghRelease)
	}
	if got := job.Steps[setupGo].With["go-version-file"]; got != "go.mod" {
		t.Errorf("setup-go takes go-version-file %q, want go.mod", got)
	}
	if !strings.Contains(job.Steps[ghRelease].Run, "_output/release/") {
		t.Errorf("gh release create does not upload _output/release/: %s", job.Steps[ghRelease].Run)
	}
}
