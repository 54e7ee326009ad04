package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// chartValues are the chart's values.yaml, as a tree.
type chartValues struct{ root *yaml.Node }

func readValues(t *testing.T) chartValues {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, valuesFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		t.Fatalf("%s: not a YAML mapping (%v)", valuesFile, err)
	}
	return chartValues{doc.Content[0]}
}

// topLevel are the first names of every value path.
func (v chartValues) topLevel() []string {
	var keys []string
	for i := 0; i+1 < len(v.root.Content); i += 2 {
		keys = append(keys, v.root.Content[i].Value)
	}
	return keys
}

// has reports whether the dotted path is a value of the chart, or a key inside one
// that is a map of the user's (labels, issuerRef: empty by default).
func (v chartValues) has(path string) bool {
	cur := v.root
	for _, name := range strings.Split(path, ".") {
		if cur.Kind != yaml.MappingNode {
			return false
		}
		if len(cur.Content) == 0 {
			return true // a map left to the user: {} by default
		}
		var next *yaml.Node
		for i := 0; i+1 < len(cur.Content); i += 2 {
			if cur.Content[i].Value == name {
				next = cur.Content[i+1]
			}
		}
		if next == nil {
			return false
		}
		cur = next
	}
	return true
}

var (
	// setFlag is a value given to helm on the command line.
	setFlag = regexp.MustCompile(`--set(?:-string|-json|-file)?[= ]([A-Za-z][\w.]*)=`)
	// valuePath is a dotted name that may be a chart value: manager.holdUncovered,
	// certManager.enabled=false, .Values.webhook.failurePolicy.
	valuePath = regexp.MustCompile(`(?:^|[^\w./-])(?:\.Values\.)?([a-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)+)([^\w./]|\.$|\.\s|$)`)
)

// notValuePath are last names that make a dotted name a file or an API group
// (admission.k8s.io, webhook.go), not a value.
var notValuePath = []string{"io", "com", "go", "md", "yaml", "json", "tpl", "txt", "sh", "k8s"}

// Every chart value the docs name exists in values.yaml: a `--set a.b=...`, a dotted
// name in code or in NOTES.txt or values.yaml's comments that starts with a top-level
// value (`manager.workers`, metrics.prometheus.serviceAccount.name).
func TestChartValuesExist(t *testing.T) {
	values := readValues(t)
	top := values.topLevel()
	var p problems
	found := 0
	for _, file := range append(docFiles(t), valuesFile) {
		prose := file == notesFile || file == valuesFile
		for _, l := range readLines(t, file) {
			texts := codeSpans(l)
			if file == valuesFile {
				_, comment, ok := strings.Cut(l.text, "#")
				if !ok {
					continue
				}
				texts = []string{comment}
			} else if prose {
				texts = []string{l.text}
			}
			for _, text := range texts {
				var paths []string
				for _, m := range setFlag.FindAllStringSubmatch(text, -1) {
					paths = append(paths, m[1])
				}
				for _, m := range valuePath.FindAllStringSubmatch(text, -1) {
					path := m[1]
					first, _, _ := strings.Cut(path, ".")
					last := path[strings.LastIndex(path, ".")+1:]
					if !slices.Contains(top, first) || slices.Contains(notValuePath, last) || strings.HasPrefix(m[2], "/") {
						continue
					}
					paths = append(paths, path)
				}
				for _, path := range paths {
					found++
					if !values.has(path) {
						p.add(l.pos(), "%s: no such value in %s", path, valuesFile)
					}
				}
			}
		}
	}
	if found < 30 {
		t.Errorf("only %d chart values found in the docs: the extraction is broken", found)
	}
	p.report(t, "chart values that do not exist")
}
