package quota

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRecordWriters: the fields of the record every part shares, podState, are
// written only by the files recordWriters names for each.

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
