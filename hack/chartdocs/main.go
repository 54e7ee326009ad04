package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// Paths relative to the repository root.
const (
	chartDir   = "charts/quotagate"
	valuesFile = "charts/quotagate/values.yaml"
	readmeFile = "charts/quotagate/README.md"
)

func main() {
	root := flag.String("root", ".", "Repository root.")
	check := flag.Bool("check", false, "Only check that the README is current; exit 1 if not.")
	flag.Parse()
	stale, err := run(*root, *check)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartdocs:", err)
		os.Exit(1)
	}
	if stale && *check {
		fmt.Fprintf(os.Stderr, "chartdocs: %s is stale: run 'go run ./hack/chartdocs' (or make manifests)\n", readmeFile)
		os.Exit(1)
	}
}

// run regenerates the README's values table and inventory under root; it reports whether the README
// differed, and with check leaves it as it was.
func run(root string, check bool) (bool, error) {
	values, err := os.ReadFile(filepath.Join(root, valuesFile))
	if err != nil {
		return false, err
	}
	readmePath := filepath.Join(root, readmeFile)
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		return false, err
	}
	rows, err := Rows(values)
	if err != nil {
		return false, fmt.Errorf("%s: %w", valuesFile, err)
	}
	out, err := Splice(readme, Table(rows))
	if err != nil {
		return false, fmt.Errorf("%s: %w", readmeFile, err)
	}
	objects, err := Inventory(filepath.Join(root, chartDir))
	if err != nil {
		return false, fmt.Errorf("%s: %w", chartDir, err)
	}
	inventory, err := InventoryTable(objects)
	if err != nil {
		return false, err
	}
	if out, err = spliceBetween(out, InventoryBeginMarker, InventoryEndMarker, "inventory", inventory); err != nil {
		return false, fmt.Errorf("%s: %w", readmeFile, err)
	}
	if bytes.Equal(out, readme) {
		return false, nil
	}
	if check {
		return true, nil
	}
	return true, os.WriteFile(readmePath, out, 0o644)
}
