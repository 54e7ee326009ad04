package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Paths relative to the repository root.
const (
	corePattern = "./pkg/quota/..."
	docFile     = "pkg/quota/doc.go"
)

func main() {
	root := flag.String("root", ".", "Repository root.")
	flag.Parse()
	if err := run(*root, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "layers:", err)
		os.Exit(1)
	}
}

// run checks the core under root and reports on w what it checked.
func run(root string, w io.Writer) error {
	doc, err := os.ReadFile(filepath.Join(root, docFile))
	if err != nil {
		return err
	}
	layers, err := parseLayers(string(doc))
	if err != nil {
		return fmt.Errorf("%s: %w", docFile, err)
	}
	graph, err := listImports(root)
	if err != nil {
		return err
	}
	if errs := check(layers, graph); len(errs) > 0 {
		return errors.Join(errs...)
	}
	helpers := 0
	for p := range graph {
		if testHelper(p) {
			helpers++
		}
	}
	fmt.Fprintf(w, "layers: %d packages in %d layers, every import points down (test helper packages, imported only by tests: %d)\n",
		len(graph)-helpers, len(layers), helpers)
	return nil
}

// listImports returns the imports of every package under pkg/quota, by path relative to
// the module (pkg/quota/internal/heap), keeping only those of the module itself. It
// lists with -e, so that an import that closes a cycle (always an upward one) is named
// by the check rather than only by go list's error.
func listImports(root string) (map[string][]string, error) {
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Module", corePattern)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w: %s", corePattern, err, stderr.String())
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
			Module     struct{ Path string }
		}
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("decoding go list's output: %w", err)
		}
		prefix := p.Module.Path + "/"
		rel := strings.TrimPrefix(p.ImportPath, prefix)
		graph[rel] = nil
		for _, imp := range p.Imports {
			if r, ok := strings.CutPrefix(imp, prefix); ok {
				graph[rel] = append(graph[rel], r)
			}
		}
	}
	return graph, nil
}
