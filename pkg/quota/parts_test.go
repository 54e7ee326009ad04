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

// preemptionFiles are the preemption part's files: its state is preemptions, and
// podPreemption on each pod.
var preemptionFiles = []string{"preemptions.go", "preempt.go", "preemptcooldown.go", "victims.go", "victimorder.go", "reclaimfloor.go", "blocked.go", "overhard.go", "overrun.go"}

// agendaFiles are the agenda's files: its state is agenda, and podEntries on each pod.
var agendaFiles = []string{"agenda.go", "wake.go"}

// admitterFiles are the admitter's files: its state is admitter, and podAttempt on each
// pod.
var admitterFiles = []string{"admit.go", "attempts.go", "timers.go", "flavor_choice.go"}

// coreParts are the parts doc.go draws. A part's knowledge of one pod is a type of its
// own on the pod's record (podState.charge, .attempt, .queued, .preemption), listed
// here too: declared in podparts.go with the methods the other parts read it by.
var coreParts = []part{
	{typ: "queues", files: []string{"queue.go", "wake.go"}},
	{typ: "topology", files: []string{"topology.go", "resolve.go"}},
	{typ: "preemptions", files: preemptionFiles},
	{typ: "podPreemption", files: append(slices.Clone(preemptionFiles), "podparts.go")},
	{typ: "families", files: familyFiles},
	{typ: "familyState", files: familyFiles},
	{typ: "agenda", files: agendaFiles},
	{typ: "podEntries", files: append(slices.Clone(agendaFiles), "podparts.go")},
	{typ: "charges", files: []string{"charges.go"}},
	{typ: "podCharge", files: []string{"charges.go", "podparts.go"}},
	{typ: "podIndex", files: []string{"podstate.go"}},
	{typ: "placer", files: placerFiles},
	{typ: "admitter", files: admitterFiles},
	{typ: "podAttempt", files: append(slices.Clone(admitterFiles), "podparts.go")},
	{typ: "hourBooks", files: []string{"hourbooks.go"}},
	{typ: "flavorIndex", files: []string{"flavors.go"}},
	{typ: "Reads", files: []string{"reader.go", "status.go", "snapshot.go", "page.go", "podplaces.go", "reasons.go", "reasontext.go", "heads.go"}},
}

// placerFiles are the placer's files; groups.go is its index of groups (groupIndex).
var placerFiles = []string{"placer.go", "park.go", "groups_settle.go", "starts.go"}

// recordWriters are the files that may write each field of podState, the record every
// part shares: what the pod is (its view, order, group, coverage, amounts) and where it
// waits. The placer, which every event about a pod enters, writes what the pod is; the
// charges part moves its coverage with its charge (charges.recharge), and groupIndex
// sets its group. Where it waits changes only by the record's own transitions in
// podstate.go (podState.assume, run, backOff, park and the rest), which the placer and
// the admitter call. No other part writes it: each keeps what it knows of a pod in a
// type of its own on the record (charge, attempt, queued, preemption; coreParts keeps
// everyone else out of those).
var recordWriters = map[string][]string{
	"pod":        {"podstate.go", "placer.go"},
	"phase":      {"podstate.go"},
	"order":      {"placer.go"},
	"group":      {"groups.go"},
	"seen":       {"placer.go"},
	"cover":      {"placer.go", "charges.go"},
	"queued":     agendaFiles,
	"units":      {"podstate.go"},
	"claimUnits": {"podstate.go"},
	"flavor":     {"podstate.go"},
	"reach":      {"podstate.go"},
	"charge":     {"charges.go", "placer.go"},
	"attempt":    append(slices.Clone(admitterFiles), "placer.go"),
	"wait":       {"podstate.go"},
	"parked":     {"podstate.go"},
	"inBackoff":  {"podstate.go"},
	"preemption": preemptionFiles,
	"forgotten":  {"podstate.go"},
}

// coreFiles parses and type-checks the package's non-test files.
func coreFiles(t *testing.T) (*token.FileSet, []string, []*ast.File, *types.Package, *types.Info) {
	t.Helper()
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
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Types: map[ast.Expr]types.TypeAndValue{}}
	pkg, err := conf.Check("quota", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	return fset, names, files, pkg, info
}

func TestRecordWriters(t *testing.T) {
	fset, _, files, pkg, info := coreFiles(t)
	st := pkg.Scope().Lookup("podState").Type().Underlying().(*types.Struct)
	for i := range st.NumFields() {
		if _, ok := recordWriters[st.Field(i).Name()]; !ok {
			t.Errorf("podState.%s: not in recordWriters; say which files write it", st.Field(i).Name())
		}
	}
	for _, v := range recordWrites(fset, files, info, st, recordWriters) {
		t.Error(v)
	}
}

// recordWrites returns, as "file:line: ...", every write of a field of record in a
// file that writers does not name for it: an assignment or an increment to the field or
// to a part of it reached without a pointer, a map or a slice between (p.wait.reach is a
// write of wait; p.group.members[k] is not a write of group), and a composite literal
// naming it. A write through a pointer taken with & is not seen: the compiler cannot
// tell it from a read either.
func recordWrites(fset *token.FileSet, files []*ast.File, info *types.Info, record *types.Struct, writers map[string][]string) []string {
	fields := map[*types.Var]bool{}
	for i := range record.NumFields() {
		fields[record.Field(i)] = true
	}
	var out []string
	check := func(id *ast.Ident) {
		v, ok := info.Uses[id].(*types.Var)
		if !ok || !fields[v] {
			return
		}
		pos := fset.Position(id.Pos())
		if file := filepath.Base(pos.Filename); !slices.Contains(writers[v.Name()], file) {
			out = append(out, fmt.Sprintf("%s:%d: writes podState.%s, which only %s may write", file, pos.Line, v.Name(), strings.Join(writers[v.Name()], ", ")))
		}
	}
	// written finds the record field an assignment to e writes, if any.
	written := func(e ast.Expr) {
		for {
			switch x := e.(type) {
			case *ast.ParenExpr:
				e = x.X
			case *ast.SelectorExpr:
				if v, ok := info.Uses[x.Sel].(*types.Var); ok && fields[v] {
					check(x.Sel)
					return
				}
				if _, ptr := info.TypeOf(x.X).Underlying().(*types.Pointer); ptr {
					return // the write lands behind the pointer
				}
				e = x.X
			case *ast.IndexExpr:
				if _, array := info.TypeOf(x.X).Underlying().(*types.Array); !array {
					return // a map's or a slice's element
				}
				e = x.X
			default:
				return
			}
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch s := n.(type) {
			case *ast.AssignStmt:
				for _, l := range s.Lhs {
					written(l)
				}
			case *ast.IncDecStmt:
				written(s.X)
			case *ast.CompositeLit:
				if tv, ok := info.Types[s]; ok && types.Identical(tv.Type.Underlying(), record) {
					for _, el := range s.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							if id, ok := kv.Key.(*ast.Ident); ok {
								check(id)
							}
						}
					}
				}
			}
			return true
		})
	}
	slices.Sort(out)
	return out
}

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
			fset, _, pkg, info := checkSources(t, "ledger.go", decl, tc.file, tc.src)
			if diff := cmp.Diff(tc.want, fieldReads(fset, pkg, info, parts)); diff != "" {
				t.Errorf("fieldReads (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecordWrites(t *testing.T) {
	const decl = `package p
type info struct{ reach []string }
type group struct{ members map[string]int }
type podState struct {
	phase int
	wait  info
	group *group
	tries [2]int
}
func f(p *podState) { p.phase, p.wait = 1, info{} }
`
	writers := map[string][]string{"phase": {"placer.go"}, "wait": {"placer.go"}, "group": {"placer.go"}, "tries": {"placer.go"}}
	for _, tc := range []struct {
		name string
		src  string
		want []string
	}{
		{
			name: "reads, and writes behind a pointer or in a map",
			src:  "package p\nfunc g(p *podState) int {\n\tp.group.members[\"a\"] = p.phase\n\tw := &p.wait\n\tw.reach = nil\n\treturn len(p.wait.reach)\n}\n",
		},
		{
			name: "an assignment, and a part of a field",
			src:  "package p\nfunc g(p *podState) {\n\tp.phase = 2\n\tp.wait.reach = nil\n}\n",
			want: []string{
				"admit.go:3: writes podState.phase, which only placer.go may write",
				"admit.go:4: writes podState.wait, which only placer.go may write",
			},
		},
		{
			name: "an increment, an array's element, a pointer field",
			src:  "package p\nfunc g(p *podState) {\n\tp.phase++\n\tp.tries[1] = 3\n\tp.group = nil\n}\n",
			want: []string{
				"admit.go:3: writes podState.phase, which only placer.go may write",
				"admit.go:4: writes podState.tries, which only placer.go may write",
				"admit.go:5: writes podState.group, which only placer.go may write",
			},
		},
		{
			name: "a composite literal",
			src:  "package p\nvar x = &podState{\n\tphase: 1,\n}\n",
			want: []string{"admit.go:3: writes podState.phase, which only placer.go may write"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset, files, pkg, info := checkSources(t, "placer.go", decl, "admit.go", tc.src)
			record := pkg.Scope().Lookup("podState").Type().Underlying().(*types.Struct)
			if diff := cmp.Diff(tc.want, recordWrites(fset, files, info, record, writers)); diff != "" {
				t.Errorf("recordWrites (-want +got):\n%s", diff)
			}
		})
	}
}

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

// partStruct is the struct of a part's type in pkg, nil when pkg has none by that name.
func partStruct(pkg *types.Package, p part) *types.Struct {
	obj, ok := pkg.Scope().Lookup(p.typ).(*types.TypeName)
	if !ok {
		return nil
	}
	st, _ := obj.Type().Underlying().(*types.Struct)
	return st
}

// checkSources parses and type-checks a package "p" of files given as name, source,
// name, source...: the small packages the checks' own tests feed them.
func checkSources(t *testing.T, nameSrc ...string) (*token.FileSet, []*ast.File, *types.Package, *types.Info) {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for i := 0; i+1 < len(nameSrc); i += 2 {
		f, err := parser.ParseFile(fset, nameSrc[i], nameSrc[i+1], 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Types: map[ast.Expr]types.TypeAndValue{}}
	pkg, err := (&types.Config{Importer: importer.Default()}).Check("p", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	return fset, files, pkg, info
}
