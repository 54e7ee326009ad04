package quota

import (
	"fmt"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPartsOwnTheirFields: a part's fields are selected only in its own files.

func TestPartsOwnTheirFields(t *testing.T) {
	fset, names, _, pkg, info := coreFiles(t)
	for _, p := range coreParts {
		if pkg.Scope().Lookup(p.typ) == nil {
			t.Errorf("part %s: no such type in the package (coreParts is out of date)", p.typ)
		}
		for _, f := range p.files {
			if !slices.Contains(names, f) {
				t.Errorf("part %s: no file %s (coreParts is out of date)", p.typ, f)
			}
		}
	}
	for _, v := range fieldReads(fset, pkg, info, coreParts) {
		t.Error(v)
	}
}

// fieldReads returns, as "file:line: ...", every use of a field of a part's type in a
// file that is not the part's.
func fieldReads(fset *token.FileSet, pkg *types.Package, info *types.Info, parts []part) []string {
	owner := map[*types.Var]part{}
	for _, p := range parts {
		st := partStruct(pkg, p)
		if st == nil {
			continue
		}
		for i := range st.NumFields() {
			owner[st.Field(i)] = p
		}
	}
	var out []string
	for id, obj := range info.Uses {
		v, ok := obj.(*types.Var)
		if !ok || !v.IsField() {
			continue
		}
		p, ok := owner[v]
		if !ok {
			continue
		}
		pos := fset.Position(id.Pos())
		if file := filepath.Base(pos.Filename); !slices.Contains(p.files, file) {
			out = append(out, fmt.Sprintf("%s:%d: uses %s.%s outside the part's files (%s): give %s a method instead",
				file, pos.Line, p.typ, v.Name(), strings.Join(p.files, ", "), p.typ))
		}
	}
	slices.Sort(out)
	return out
}

func TestFieldReads(t *testing.T) {
	const decl = `package p
type ledger struct{ used, hard int }
func (l *ledger) free() int { return l.hard - l.used }
type budget struct {
	ledger
	named ledger
}
`
	parts := []part{{typ: "ledger", files: []string{"ledger.go"}}}
	for _, tc := range []struct {
		name string
		file string
		src  string
		want []string
	}{
		{
			name: "a method of the part, from outside",
			file: "admit.go",
			src:  "package p\nfunc f(b *budget) int { return b.free() + b.named.free() }\n",
		},
		{
			name: "its fields, in its own file",
			file: "ledger.go",
			src:  "package p\nfunc f(b *budget) int { return b.used + b.named.hard }\n",
		},
		{
			name: "a promoted field, from outside",
			file: "admit.go",
			src:  "package p\nfunc f(b *budget) int {\n\treturn b.used\n}\n",
			want: []string{"admit.go:3: uses ledger.used outside the part's files (ledger.go): give ledger a method instead"},
		},
		{
			name: "a field through a named part, and a write",
			file: "borrowing.go",
			src:  "package p\nfunc f(b *budget) {\n\tb.named.hard = b.named.free()\n}\n",
			want: []string{"borrowing.go:3: uses ledger.hard outside the part's files (ledger.go): give ledger a method instead"},
		},
		{
			name: "a composite literal naming a field",
			file: "budget.go",
			src:  "package p\nvar l = ledger{\n\tused: 1,\n}\n",
			want: []string{"budget.go:3: uses ledger.used outside the part's files (ledger.go): give ledger a method instead"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset, _, pkg, info := checkSources(t, "ledger.go", decl, tc.file, tc.src)
			if diff := cmp.Diff(tc.want, fieldReads(fset, pkg, info, parts)); diff != "" {
				t.Errorf("fieldReads (-want +got):\n%s", diff)
			}
		})
	}
}
