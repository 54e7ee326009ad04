package quota

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A part of the core (doc.go) owns its state: only its own files select the fields of
// the type that holds it; everyone else asks its methods. TestPartsOwnTheirFields
// checks that over the package's non-test files, with the type checker (a field
// promoted through an embedded part, or named in a composite literal, counts too).

// part is one part of the core: the type that holds its state and the files that may
// select its fields.
type part struct {
	typ   string
	files []string
}

// familyFiles are the family part's files: its state is families (on AdmissionQueue)
// and familyState (on each budget).
var familyFiles = []string{"families.go", "borrowing.go", "fairshare.go", "hold.go", "lendclaims.go"}

// coreParts are the parts doc.go draws.
var coreParts = []part{
	{typ: "queues", files: []string{"queue.go", "wake.go"}},
	{typ: "topology", files: []string{"topology.go", "resolve.go"}},
	{typ: "preemptions", files: []string{"preemptions.go", "preempt.go", "preemptcooldown.go", "victims.go", "victimorder.go", "reclaimfloor.go", "blocked.go", "overhard.go", "overrun.go"}},
	{typ: "families", files: familyFiles},
	{typ: "familyState", files: familyFiles},
	{typ: "agenda", files: []string{"agenda.go", "wake.go"}},
	{typ: "charges", files: []string{"charges.go"}},
	{typ: "podIndex", files: []string{"podstate.go"}},
	{typ: "placer", files: []string{"placer.go", "park.go", "groups_settle.go", "starts.go"}},
	{typ: "admitter", files: []string{"admit.go", "attempts.go", "timers.go", "flavor_choice.go"}},
	{typ: "hourBooks", files: []string{"hourbooks.go"}},
	{typ: "flavorIndex", files: []string{"flavors.go"}},
	{typ: "Reads", files: []string{"reader.go", "status.go", "snapshot.go", "page.go", "podplaces.go", "reasons.go", "reasontext.go", "heads.go"}},
}

func TestPartsOwnTheirFields(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: exportImporter(t, fset)}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := conf.Check("quota", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
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
		obj, ok := pkg.Scope().Lookup(p.typ).(*types.TypeName)
		if !ok {
			continue
		}
		st, ok := obj.Type().Underlying().(*types.Struct)
		if !ok {
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

// exportImporter imports the package's dependencies from the export data the go
// command builds for them (go list -export; cached after a build).
func exportImporter(t *testing.T, fset *token.FileSet) types.Importer {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{if .Export}}{{.ImportPath}}={{.Export}}{{end}}", ".")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		path, file, _ := strings.Cut(sc.Text(), "=")
		exports[path] = file
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
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
			fset := token.NewFileSet()
			var files []*ast.File
			for _, s := range []struct{ name, src string }{{"ledger.go", decl}, {tc.file, tc.src}} {
				f, err := parser.ParseFile(fset, s.name, s.src, 0)
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, f)
			}
			info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
			pkg, err := (&types.Config{Importer: importer.Default()}).Check("p", fset, files, info)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, fieldReads(fset, pkg, info, parts)); diff != "" {
				t.Errorf("fieldReads (-want +got):\n%s", diff)
			}
		})
	}
}
