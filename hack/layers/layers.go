package main

import (
	"bufio"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
)

// core is the root of the packages the layers order, relative to the module.
const core = "pkg/quota"

// layersHeading opens the section of doc.go that declares the order.
const layersHeading = "// # Layers"

// parseLayers reads the layer order from the package comment in doc: the first code
// block (lines "//\t...") after the "# Layers" heading, one layer a line, the highest
// first. A line names its packages (paths relative to the module, starting with
// pkg/quota) and then, after them, says what they are.
func parseLayers(doc string) ([][]string, error) {
	var layers [][]string
	seen := map[string]bool{}
	in, block := false, false
	sc := bufio.NewScanner(strings.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		if !in {
			in = strings.TrimSpace(line) == layersHeading
			continue
		}
		text, isCode := strings.CutPrefix(line, "//\t")
		if !isCode {
			if block {
				break // the block ended
			}
			continue
		}
		block = true
		var layer []string
		for _, f := range strings.Fields(text) {
			if f != core && !strings.HasPrefix(f, core+"/") {
				break
			}
			if seen[f] {
				return nil, fmt.Errorf("%s is in two layers", f)
			}
			seen[f] = true
			layer = append(layer, f)
		}
		if len(layer) == 0 {
			return nil, fmt.Errorf("layer line %q names no package under %s", strings.TrimSpace(text), core)
		}
		layers = append(layers, layer)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(layers) == 0 {
		return nil, fmt.Errorf("no layers: want a %q section with one layer a line, in a code block", strings.TrimPrefix(layersHeading, "// "))
	}
	return layers, nil
}

// check returns what in graph (each package's imports within the module, by path
// relative to it) goes against layers (the highest first): an import of a package under
// pkg/quota that is not in a lower layer, a package under pkg/quota that no layer
// declares, and a declared package that graph does not have. Imports of packages
// outside pkg/quota are not its concern. A test helper (testHelper) is in no layer: it
// is for tests, and a package that imports it is an error.
func check(layers [][]string, graph map[string][]string) []error {
	level := map[string]int{} // 0: the lowest layer
	for i, layer := range layers {
		for _, p := range layer {
			level[p] = len(layers) - 1 - i
		}
	}
	var errs []error
	for _, p := range slices.Sorted(maps.Keys(graph)) {
		if testHelper(p) {
			continue
		}
		lp, ok := level[p]
		if !ok {
			errs = append(errs, fmt.Errorf("%s is not declared in the layers of %s: add it to the layer it belongs to", p, core))
			continue
		}
		for _, imp := range slices.Sorted(slices.Values(graph[p])) {
			if imp != core && !strings.HasPrefix(imp, core+"/") {
				continue
			}
			li, ok := level[imp]
			switch {
			case testHelper(imp):
				errs = append(errs, fmt.Errorf("%s imports %s, a test helper: only tests may", p, imp))
			case !ok:
				errs = append(errs, fmt.Errorf("%s imports %s, which is not declared in the layers of %s", p, imp, core))
			case li == lp:
				errs = append(errs, fmt.Errorf("%s imports %s of its own layer: an import points down, so one of them belongs in another layer", p, imp))
			case li > lp:
				errs = append(errs, fmt.Errorf("%s imports %s, which is in a higher layer: the import points up", p, imp))
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(level)) {
		if _, ok := graph[p]; !ok {
			errs = append(errs, fmt.Errorf("%s is declared in the layers but is no package", p))
		}
	}
	return errs
}

// testHelper reports whether p is a package of helpers for tests, named as Go names
// them: after the package it helps test, with "test" appended, under it
// (net/http/httptest, pkg/quota/internal/amount/amounttest). A package that merely ends
// in "test" (latest) is not one.
func testHelper(p string) bool {
	dir, base := path.Split(p)
	return base == path.Base(path.Clean(dir))+"test"
}
