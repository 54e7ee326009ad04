package quota

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The core stays a place where a feature can land without growing one type again
// (doc.go): the composer, AdmissionQueue, has at most composerMethods methods, every
// other type at most partMethods, and no file is longer than fileLines lines.
// TestCoreSize checks that over the package's non-test files; make verify runs it
// beside TestPartsOwnTheirFields.
const (
	composerMethods = 30
	partMethods     = 25
	fileLines       = 350
)

func TestCoreSize(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	srcs := map[string]string{}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		srcs[n] = string(b)
	}
	if len(srcs) == 0 {
		t.Fatal("no source files found")
	}
	for _, v := range sizeViolations(t, srcs) {
		t.Error(v)
	}
}

// sizeViolations returns a sentence for each type with more methods than its limit and
// each file with more lines than fileLines, in a stable order.
func sizeViolations(t *testing.T, srcs map[string]string) []string {
	t.Helper()
	fset := token.NewFileSet()
	methods := map[string]int{}
	var out []string
	for name, src := range srcs {
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n := fset.File(f.Pos()).LineCount(); n > fileLines {
			out = append(out, fmt.Sprintf("%s: %d lines, more than %d: split it where its parts show", name, n, fileLines))
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && len(fd.Recv.List) == 1 {
				methods[receiverType(fd.Recv.List[0].Type)]++
			}
		}
	}
	for typ, n := range methods {
		limit := partMethods
		if typ == "AdmissionQueue" {
			limit = composerMethods
		}
		if n > limit {
			out = append(out, fmt.Sprintf("type %s: %d methods, more than %d: give a part of it a type of its own", typ, n, limit))
		}
	}
	slices.Sort(out)
	return out
}

// receiverType is the name of a receiver's type: T for T, *T, T[K] and *T[K].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return fmt.Sprintf("%T", e)
		}
	}
}

func TestSizeViolations(t *testing.T) {
	methods := func(typ string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "func (x *%s) m%d() {}\n", typ, i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name string
		srcs map[string]string
		want []string
	}{
		{
			name: "within every limit",
			srcs: map[string]string{
				"queue.go": "package p\ntype AdmissionQueue struct{}\ntype ledger struct{}\n" + methods("AdmissionQueue", composerMethods) + methods("ledger", partMethods),
			},
		},
		{
			name: "a part with one method too many, split over two files",
			srcs: map[string]string{
				"ledger.go":  "package p\ntype ledger struct{}\n" + methods("ledger", partMethods),
				"ledger2.go": "package p\nfunc (l ledger) extra() {}\n",
			},
			want: []string{fmt.Sprintf("type ledger: %d methods, more than %d: give a part of it a type of its own", partMethods+1, partMethods)},
		},
		{
			name: "the composer past its own limit, and a generic type",
			srcs: map[string]string{
				"queue.go": "package p\ntype AdmissionQueue struct{}\ntype heap[T any] struct{}\nfunc (h *heap[T]) push() {}\n" + methods("AdmissionQueue", composerMethods+1),
			},
			want: []string{fmt.Sprintf("type AdmissionQueue: %d methods, more than %d: give a part of it a type of its own", composerMethods+1, composerMethods)},
		},
		{
			name: "a file too long",
			srcs: map[string]string{
				"long.go": "package p\n" + strings.Repeat("\n", fileLines),
			},
			want: []string{fmt.Sprintf("long.go: %d lines, more than %d: split it where its parts show", fileLines+1, fileLines)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, sizeViolations(t, tc.srcs)); diff != "" {
				t.Errorf("sizeViolations (-want +got):\n%s", diff)
			}
		})
	}
}
