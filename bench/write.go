package main

import (
	"encoding/json"
	"fmt"
	"os"
)

// document is a benchmark's report: the JSON holds every number, and the Markdown is
// rendered from it alone, so that -render-only renders it again without measuring.
type document interface {
	markdown() string
}

// write writes the report r as JSON to jsonPath and as Markdown to mdPath.
func write(r document, jsonPath, mdPath string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(jsonPath, append(raw, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(mdPath, []byte(r.markdown()), 0o644); err != nil {
		return err
	}
	logf("Wrote %s and %s", mdPath, jsonPath)
	return nil
}

// renderAgain reads the JSON report at jsonPath into r, a pointer to an empty report,
// and writes its Markdown to mdPath.
func renderAgain(r document, jsonPath, mdPath string) error {
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, r); err != nil {
		return fmt.Errorf("reading %s: %w", jsonPath, err)
	}
	return os.WriteFile(mdPath, []byte(r.markdown()), 0o644)
}
