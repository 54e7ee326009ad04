package quota

import (
	"go/types"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNoCycleBetweenParts: no part holds, through its fields, a part that holds it
// back.

// TestNoCycleBetweenParts checks that no part holds, through its fields, a part that
// holds it back, directly or through others: each part's state points only down the
// order the composer builds them in (AdmissionQueue, engine.go).
func TestNoCycleBetweenParts(t *testing.T) {
	_, _, _, pkg, _ := coreFiles(t)
	if cycle := partCycle(pkg, coreParts); cycle != nil {
		t.Errorf("parts hold each other: %s", strings.Join(cycle, " → "))
	}
}

// partCycle returns a cycle of parts that hold each other through their fields (a
// pointer, a value, or an element of a slice, array or map), or nil.
func partCycle(pkg *types.Package, parts []part) []string {
	isPart := map[string]bool{}
	for _, p := range parts {
		isPart[p.typ] = true
	}
	holds := map[string][]string{}
	var walk func(from string, t types.Type)
	walk = func(from string, t types.Type) {
		switch x := t.(type) {
		case *types.Pointer:
			walk(from, x.Elem())
		case *types.Slice:
			walk(from, x.Elem())
		case *types.Array:
			walk(from, x.Elem())
		case *types.Map:
			walk(from, x.Key())
			walk(from, x.Elem())
		case *types.Named:
			if name := x.Obj().Name(); x.Obj().Pkg() == pkg && isPart[name] && !slices.Contains(holds[from], name) {
				holds[from] = append(holds[from], name)
			}
		}
	}
	for _, p := range parts {
		st := partStruct(pkg, p)
		if st == nil {
			continue
		}
		for i := range st.NumFields() {
			walk(p.typ, st.Field(i).Type())
		}
	}
	// Depth first, in the order of parts: a part met again on the path closes a cycle.
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(n string) []string
	visit = func(n string) []string {
		state[n] = onPath
		path = append(path, n)
		for _, m := range holds[n] {
			switch state[m] {
			case onPath:
				i := slices.Index(path, m)
				return append(slices.Clone(path[i:]), m)
			case unseen:
				if c := visit(m); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = done
		return nil
	}
	for _, p := range parts {
		if state[p.typ] == unseen {
			if c := visit(p.typ); c != nil {
				return c
			}
		}
	}
	return nil
}

func TestPartCycle(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want []string
	}{
		{
			name: "held one way",
			src:  "package p\ntype placer struct{ admit *admitter }\ntype admitter struct{ n int }\n",
		},
		{
			name: "held both ways",
			src:  "package p\ntype placer struct{ admit *admitter }\ntype admitter struct{ place *placer }\n",
			want: []string{"placer", "admitter", "placer"},
		},
		{
			name: "through a third part, in a map",
			src:  "package p\ntype placer struct{ admit *admitter }\ntype admitter struct{ c []charges }\ntype charges struct{ by map[string]*placer }\n",
			want: []string{"placer", "admitter", "charges", "placer"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, pkg, _ := checkSources(t, "p.go", tc.src)
			parts := []part{{typ: "placer"}, {typ: "admitter"}, {typ: "charges"}}
			if diff := cmp.Diff(tc.want, partCycle(pkg, parts)); diff != "" {
				t.Errorf("partCycle (-want +got):\n%s", diff)
			}
		})
	}
}
