package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testDoc = `// Package quota is the core.
//
// # Layers
//
// The packages, the highest first:
//
//	pkg/quota/controller             the reconcilers
//	pkg/quota                        the composer
//	pkg/quota/internal/amount pkg/quota/internal/heap   the leaves
//
// More text.
//
//	q := quota.NewAdmissionQueue()
package quota
`

func TestParseLayers(t *testing.T) {
	got, err := parseLayers(testDoc)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"pkg/quota/controller"},
		{"pkg/quota"},
		{"pkg/quota/internal/amount", "pkg/quota/internal/heap"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layers (-want +got):\n%s", diff)
	}
}

func TestParseLayersRejects(t *testing.T) {
	tests := map[string]struct {
		doc  string
		want string // in the error
	}{
		"no section":       {doc: "// Package quota.\npackage quota\n", want: "no layers"},
		"twice":            {doc: "// # Layers\n//\n//\tpkg/quota\n//\tpkg/quota leaves\n", want: "pkg/quota is in two layers"},
		"line of no names": {doc: "// # Layers\n//\n//\tthe leaves\n", want: `"the leaves" names no package`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := parseLayers(tc.doc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseLayers = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	layers := [][]string{
		{"pkg/quota/controller"},
		{"pkg/quota"},
		{"pkg/quota/internal/amount", "pkg/quota/internal/heap"},
	}
	good := func() map[string][]string {
		return map[string][]string{
			"pkg/quota/controller":      {"pkg/quota", "pkg/quota/internal/amount", "pkg/estimate", "api/v1alpha1"},
			"pkg/quota":                 {"pkg/quota/internal/amount", "pkg/quota/internal/heap", "pkg/gates"},
			"pkg/quota/internal/amount": nil,
			"pkg/quota/internal/heap":   nil,
		}
	}
	tests := map[string]struct {
		change func(g map[string][]string)
		want   []string // one error each, by what it says
	}{
		"the core as it is": {change: func(map[string][]string) {}},
		"a leaf imports the composer": {
			change: func(g map[string][]string) { g["pkg/quota/internal/heap"] = []string{"pkg/quota"} },
			want:   []string{"pkg/quota/internal/heap imports pkg/quota, which is in a higher layer: the import points up"},
		},
		"the composer imports the controller": {
			change: func(g map[string][]string) { g["pkg/quota"] = append(g["pkg/quota"], "pkg/quota/controller") },
			want:   []string{"pkg/quota imports pkg/quota/controller, which is in a higher layer: the import points up"},
		},
		"a leaf imports a leaf of its layer": {
			change: func(g map[string][]string) { g["pkg/quota/internal/heap"] = []string{"pkg/quota/internal/amount"} },
			want:   []string{"pkg/quota/internal/heap imports pkg/quota/internal/amount of its own layer"},
		},
		"a package no layer declares": {
			change: func(g map[string][]string) {
				g["pkg/quota/internal/undeclared"] = nil
				g["pkg/quota"] = append(g["pkg/quota"], "pkg/quota/internal/undeclared")
			},
			want: []string{
				"pkg/quota imports pkg/quota/internal/undeclared, which is not declared",
				"pkg/quota/internal/undeclared is not declared in the layers",
			},
		},
		"a test helper, in no layer": {
			change: func(g map[string][]string) {
				g["pkg/quota/internal/amount/amounttest"] = []string{"pkg/quota/internal/amount", "pkg/quota"}
			},
		},
		"a package whose name only ends in test": {
			change: func(g map[string][]string) {
				g["pkg/quota/internal/latest"] = nil
				g["pkg/quota"] = append(g["pkg/quota"], "pkg/quota/internal/latest")
			},
			want: []string{
				"pkg/quota imports pkg/quota/internal/latest, which is not declared",
				"pkg/quota/internal/latest is not declared in the layers",
			},
		},
		"a package imports a test helper": {
			change: func(g map[string][]string) {
				g["pkg/quota/internal/amount/amounttest"] = []string{"pkg/quota/internal/amount"}
				g["pkg/quota"] = append(g["pkg/quota"], "pkg/quota/internal/amount/amounttest")
			},
			want: []string{"pkg/quota imports pkg/quota/internal/amount/amounttest, a test helper: only tests may"},
		},
		"a declared package that is gone": {
			change: func(g map[string][]string) { delete(g, "pkg/quota/internal/heap") },
			want:   []string{"pkg/quota/internal/heap is declared in the layers but is no package"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := good()
			tc.change(g)
			errs := check(layers, g)
			if len(errs) != len(tc.want) {
				t.Fatalf("check = %v, want %d errors: %q", errs, len(tc.want), tc.want)
			}
			for i, want := range tc.want {
				if !strings.Contains(errs[i].Error(), want) {
					t.Errorf("error %d = %q, want it to say %q", i, errs[i], want)
				}
			}
		})
	}
}

// TestRepository runs the check on the repository itself, as make verify does.
func TestRepository(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(root, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "every import points down") {
		t.Errorf("run reported %q", out.String())
	}
}
