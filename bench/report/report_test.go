package report

import "testing"

func TestLink(t *testing.T) {
	tests := map[string]struct {
		md, json, want string
	}{
		"data beside the bench code": {md: "docs/benchmarks.md", json: "bench/figures/benchmarks.json", want: "../bench/figures/benchmarks.json"},
		"side by side":               {md: "docs/benchmarks.md", json: "docs/benchmarks.json", want: "benchmarks.json"},
		"absolute paths":             {md: "/repo/docs/b.md", json: "/repo/bench/scale/b.json", want: "../bench/scale/b.json"},
		"no common root":             {md: "/repo/docs/b.md", json: "out/b.json", want: "b.json"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Link(tc.md, tc.json); got != tc.want {
				t.Errorf("Link(%q, %q) = %q, want %q", tc.md, tc.json, got, tc.want)
			}
		})
	}
}
