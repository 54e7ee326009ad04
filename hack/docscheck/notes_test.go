package docscheck

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/quotagate/quotagate/tools/chartrender"
)

// What `helm install` prints says what this release installed: who adds the gate (the
// webhook before 1.36 or with admission.mode=webhook, the API server's policy otherwise,
// issue 34), and every object it names by the release's prefix is one the release has.
func TestNotesNameWhatTheReleaseInstalled(t *testing.T) {
	serves := []string{"admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"}
	for name, tc := range map[string]struct {
		apiVersions []string
		values      map[string]any
		say, not    []string
	}{
		"auto on 1.36+": {apiVersions: serves,
			say: []string{"MutatingAdmissionPolicy\nquotagate-gate; no webhook is installed", "visibility API is managed by quotagate itself"},
			not: []string{"the webhook quotagate-webhook gates"}},
		"auto before 1.36": {
			say: []string{"the webhook quotagate-webhook gates new pods", "the webhook and the visibility API is managed by quotagate itself"},
			not: []string{"MutatingAdmissionPolicy"}},
		"policy, no visibility API": {apiVersions: serves, values: map[string]any{"visibility": map[string]any{"enabled": false}}},
		"webhook, cert-manager": {apiVersions: append(slices.Clone(serves), "cert-manager.io/v1"),
			values: map[string]any{"admission": map[string]any{"mode": "webhook"}, "certManager": map[string]any{"enabled": true}},
			say:    []string{"the webhook quotagate-webhook gates new pods", "the webhook and the visibility API comes from cert-manager"}},
		"policy, Ignore": {apiVersions: serves, values: map[string]any{"webhook": map[string]any{"failurePolicy": "Ignore"}},
			say: []string{"if the gate policy fails to evaluate"},
			not: []string{"while the webhook is unavailable"}},
	} {
		t.Run(name, func(t *testing.T) {
			rel, err := chartrender.Render(filepath.Join(repoRoot, "charts", "quotagate"), "quotagate", "quotagate-system",
				chartrender.Cluster{KubeVersion: "v1.37.2", APIVersions: tc.apiVersions}, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.say {
				if !strings.Contains(rel.Notes, s) {
					t.Errorf("NOTES.txt does not say %q:\n%s", s, rel.Notes)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(rel.Notes, s) {
					t.Errorf("NOTES.txt says %q:\n%s", s, rel.Notes)
				}
			}
			var names []string
			for _, o := range append(rel.Objects, rel.Hooks...) {
				names = append(names, o.GetName())
			}
			for _, named := range regexp.MustCompile(`\bquotagate-[a-z][a-z-]*[a-z]\b`).FindAllString(rel.Notes, -1) {
				if named != "quotagate-system" && !slices.Contains(names, named) {
					t.Errorf("NOTES.txt names %s, which this release does not install:\n%s", named, rel.Notes)
				}
			}
		})
	}
}
