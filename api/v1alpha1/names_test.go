package v1alpha1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestEveryNameIsClassified: each quotagate.io/ constant of names.go is in exactly one of
// ManagerWritten and UserWritten, and those lists hold nothing else. A new name the
// manager writes therefore enters ManagerWritten, and from there the gate guard's tests
// (charts/guard_test.go, pkg/admission) fail until the guard refuses it to everyone else.
func TestEveryNameIsClassified(t *testing.T) {
	constants := quotagateConstants(t, "names.go")
	if len(constants) == 0 {
		t.Fatal("names.go declares no quotagate.io/ constant")
	}
	var listed []string
	for _, k := range slices.Concat(ManagerWritten, UserWritten) {
		listed = append(listed, k.Name)
	}
	for name, value := range constants {
		switch n := count(listed, value); n {
		case 0:
			t.Errorf("%s (%s) is in neither ManagerWritten nor UserWritten: say who writes it (the manager's names are guarded from everyone else)", name, value)
		case 1:
		default:
			t.Errorf("%s (%s) is listed %d times in ManagerWritten and UserWritten, want once", name, value, n)
		}
	}
	values := map[string]bool{}
	for _, v := range constants {
		values[v] = true
	}
	for _, k := range slices.Concat(ManagerWritten, UserWritten) {
		if !values[k.Name] {
			t.Errorf("%s is listed but not a constant of names.go", k.Name)
		}
		switch k.Kind {
		case KeyAnnotation, KeyLabel, KeyFinalizer, KeyGate:
		default:
			t.Errorf("%s has kind %q, not one of KeyKind's", k.Name, k.Kind)
		}
	}
}

func TestManagerWrittenNames(t *testing.T) {
	if got, want := ManagerWrittenNames(KeyFinalizer), []string{ChargedFinalizer}; !slices.Equal(got, want) {
		t.Errorf("ManagerWrittenNames(KeyFinalizer) = %v, want %v", got, want)
	}
	for _, name := range ManagerWrittenNames(KeyAnnotation) {
		if !slices.ContainsFunc(ManagerWritten, func(k Key) bool { return k.Name == name && k.Kind == KeyAnnotation }) {
			t.Errorf("ManagerWrittenNames(KeyAnnotation) has %s, which is not an annotation of ManagerWritten", name)
		}
	}
}

// quotagateConstants returns the string constants of file whose value starts with
// quotagate.io/, by name.
func quotagateConstants(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatalf("parsing %s: %v", file, err)
	}
	out := map[string]string{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatalf("%s: %v", vs.Names[i].Name, err)
				}
				if strings.HasPrefix(s, "quotagate.io/") {
					out[vs.Names[i].Name] = s
				}
			}
		}
	}
	return out
}

func count(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}
