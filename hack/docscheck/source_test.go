package docscheck

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is two directories up: go test runs in hack/docscheck.
const repoRoot = "../.."

// The chart's files the tests read, relative to the repository root.
const (
	valuesFile         = "charts/quotagate/values.yaml"
	notesFile          = "charts/quotagate/templates/NOTES.txt"
	prometheusRuleFile = "charts/quotagate/templates/prometheusrule.yaml"
	dashboardFile      = "charts/quotagate/dashboards/quotagate.json"
)

// docFiles are the documents a reader follows: every page of docs/, the READMEs and what
// `helm install` prints.
func docFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md", "charts/quotagate/README.md", notesFile}
	for _, p := range pages {
		rel, err := filepath.Rel(repoRoot, p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	if len(files) < 10 {
		t.Fatalf("only %d documents found under %s: is the test running in hack/docscheck?", len(files), repoRoot)
	}
	slices.Sort(files)
	return files
}

// line is one line of a document.
type line struct {
	file string
	n    int    // 1-based
	text string // without the newline
	// fence is the info string of the fenced code block the line is in ("yaml", "sh",
	// "" for a block without one), and code is whether it is in one at all.
	fence string
	code  bool
}

// pos is how a failure names the line: file:line.
func (l line) pos() string { return fmt.Sprintf("%s:%d", l.file, l.n) }

// readLines reads a document; in Markdown it marks the lines of fenced code blocks.
func readLines(t *testing.T, rel string) []line {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	markdown := strings.HasSuffix(rel, ".md")
	var out []line
	inFence, fence := false, ""
	for i, text := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(text)
		if markdown && strings.HasPrefix(trimmed, "```") {
			if !inFence {
				fence = strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
			}
			inFence = !inFence
			continue
		}
		out = append(out, line{file: rel, n: i + 1, text: text, fence: fence, code: inFence})
	}
	return out
}

// codeSpans are the parts of a line that are code: the line itself inside a fenced block
// (or an indented one, four spaces), else its `inline code` spans.
func codeSpans(l line) []string {
	if l.code || strings.HasPrefix(l.text, "    ") {
		return []string{l.text}
	}
	var spans []string
	parts := strings.Split(l.text, "`")
	for i := 1; i < len(parts); i += 2 {
		if s := strings.TrimSpace(parts[i]); s != "" {
			spans = append(spans, s)
		}
	}
	return spans
}

// problems collects what a test found, one line per problem, and reports them together,
// in the order of the files and their lines.
type problems struct{ list []problem }

type problem struct {
	file string
	line int
	text string
}

// add notes a problem at pos, "file:line" or "file".
func (p *problems) add(pos, format string, args ...any) {
	file, n, _ := strings.Cut(pos, ":")
	line, _ := strconv.Atoi(n)
	p.list = append(p.list, problem{file, line, pos + ": " + fmt.Sprintf(format, args...)})
}

func (p *problems) report(t *testing.T, what string) {
	t.Helper()
	slices.SortFunc(p.list, func(a, b problem) int {
		return cmp.Or(strings.Compare(a.file, b.file), a.line-b.line, strings.Compare(a.text, b.text))
	})
	p.list = slices.Compact(p.list)
	var texts []string
	for _, q := range p.list {
		texts = append(texts, q.text)
	}
	if len(texts) > 0 {
		t.Errorf("%d %s:\n%s", len(texts), what, strings.Join(texts, "\n"))
	}
}

// paragraphs maps each line to the text of its paragraph (the lines around it up to a
// blank one), for a rule about a sentence that spans lines.
func paragraphs(lines []line) []string {
	out := make([]string, len(lines))
	start := 0
	for i := range lines {
		if strings.TrimSpace(lines[i].text) == "" || i == len(lines)-1 {
			end := i + 1
			var texts []string
			for _, l := range lines[start:end] {
				texts = append(texts, l.text)
			}
			for j := start; j < end; j++ {
				out[j] = strings.Join(texts, "\n")
			}
			start = end
		}
	}
	return out
}
