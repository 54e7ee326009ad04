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
