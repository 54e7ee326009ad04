package app

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/quotagate/quotagate/internal/version"
	"github.com/quotagate/quotagate/pkg/quota"
)

// why -o json|yaml print a PodExplanation: why's fields with apiVersion and kind.
func TestWhyJSONAndYAML(t *testing.T) {
	w := teamsWorld(t)
	decoded := map[string]map[string]any{}
	for _, format := range []string{"json", "yaml"} {
		out, errOut, err := run(t, w.env(nil), "why", "team-a/train-1", "-o", format)
		if err != nil {
			t.Fatalf("why -o %s: %v\n%s", format, err, errOut)
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(out), &obj); err != nil {
			t.Fatalf("decoding -o %s: %v\n%s", format, err, out)
		}
		decoded[format] = obj
	}
	if diff := cmp.Diff(decoded["json"], decoded["yaml"]); diff != "" {
		t.Errorf("-o yaml differs from -o json (-json +yaml):\n%s", diff)
	}
	raw, err := json.Marshal(decoded["yaml"])
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		whyResult
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.APIVersion != "cli.quotagate.io/v1alpha1" || got.Kind != "PodExplanation" {
		t.Errorf("why -o yaml: apiVersion %q, kind %q; want cli.quotagate.io/v1alpha1 PodExplanation", got.APIVersion, got.Kind)
	}
	if got.State != podWaiting || got.Reason == nil || len(got.Budgets) != 2 || got.Budgets[1].Position != 3 {
		t.Errorf("why -o yaml: %s", raw)
	}
}

func TestWhyOutputFormats(t *testing.T) {
	w := teamsWorld(t)
	tests := map[string]struct {
		args    []string
		want    string
		wantErr string
	}{
		"jsonpath": {
			args: []string{"why", "team-a/train-1", "-o", "jsonpath={.state}: {.reason.message}"},
			want: "Waiting: requests.cpu: 2 requested, 0 free in Budget team-a/team-a; position 2 of 3",
		},
		"name is not a format of why": {
			args: []string{"why", "team-a/train-1", "-o", "name"},
			wantErr: `unable to match a printer suitable for the output format "name", allowed formats are: ` +
				`go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,kyaml,template,templatefile,yaml`,
		},
		"nor is wide": {
			args: []string{"why", "team-a/train-1", "-o", "wide"},
			wantErr: `unable to match a printer suitable for the output format "wide", allowed formats are: ` +
				`go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,kyaml,template,templatefile,yaml`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := run(t, w.env(nil), tc.args...)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("why: got error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("why: %v\n%s", err, errOut)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

// kubectl quotagate version prints the client's version: one line, or -o json.
func TestVersion(t *testing.T) {
	w := teamsWorld(t)
	out, _, err := run(t, w.env(nil), "version")
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	if diff := cmp.Diff(version.Get().String()+"\n", out); diff != "" {
		t.Errorf("version (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(out, version.Version()+" (revision ") {
		t.Errorf("version does not start with the version: %q", out)
	}
	out, _, err = run(t, w.env(nil), "version", "-o", "json")
	if err != nil {
		t.Fatalf("version -o json: %v", err)
	}
	var got version.Info
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("decoding version -o json: %v\n%s", err, out)
	}
	if diff := cmp.Diff(version.Get(), got); diff != "" {
		t.Errorf("version -o json (-want +got):\n%s", diff)
	}
}

// A PodExplanation's copy prints as the original does and shares nothing with it.
func TestPodExplanationDeepCopy(t *testing.T) {
	at := t0.Add(time.Minute)
	orig := newPodExplanation(&whyResult{
		Pod: quota.PodRef{UID: "u", Namespace: "team-a", Name: "p"}, State: podAdmitted, Summary: "admitted",
		Reason: &quota.Reason{Code: quota.CodeInsufficient, Message: "waited"}, Created: t0, AdmittedAt: &at,
		AdmittedBy: []string{"team-a/team-a", "org"}, Notes: []string{"a note"},
	})
	cp := orig.DeepCopyObject().(*PodExplanation)
	a, _ := json.Marshal(orig)
	b, _ := json.Marshal(cp)
	if diff := cmp.Diff(string(a), string(b)); diff != "" {
		t.Errorf("the copy prints differently (-original +copy):\n%s", diff)
	}
	cp.Reason.Message, cp.AdmittedBy[0], cp.Notes[0] = "changed", "changed", "changed"
	*cp.AdmittedAt = t0
	if orig.Reason.Message == "changed" || orig.AdmittedBy[0] == "changed" || orig.Notes[0] == "changed" || !orig.AdmittedAt.Equal(at) {
		t.Errorf("the copy shares data with the original: %+v", orig.whyResult)
	}
}
