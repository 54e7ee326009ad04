// Package blocks reads the shell and console blocks of quotagate's Markdown (README.md
// and docs/*.md): the commands a reader would type, and the output a console block shows
// after each. A block that cannot run on a local control plane says why in an HTML
// comment on the line before its fence:
//
//	<!-- not runnable: needs a cloud registry -->
//	```sh
//	make deploy IMG=ghcr.io/me/quotagate:dev
//	```
//
// hack/docscheck checks that every block is either marked so or made only of kubectl
// commands, and hack/docscheck/live runs the unmarked ones against a local control plane
// with quotagate installed, comparing their output with the one shown.
package blocks

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Block is one fenced sh, shell, bash or console block.
type Block struct {
	// File is the Markdown file, relative to the repository; Line is the line of the
	// opening fence.
	File string
	Line int
	// Lang is the fence's language: sh, shell, bash or console.
	Lang string
	// NotRunnable is the reason the block's marker gives; empty when it has none.
	NotRunnable string
	// Marked says the block has a marker, even one whose reason is empty.
	Marked bool
	// Commands are the block's commands, in order.
	Commands []Command
}

// Pos is the block's file:line.
func (b Block) Pos() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// Command is one command line, continuations joined, its trailing comment dropped.
type Command struct {
	Line string
	// Comment is the trailing "# ..." comment, if any.
	Comment string
	// Output is what a console block shows after the command, up to the next command
	// or a blank line; nil in sh blocks.
	Output []string
}

var (
	fence  = regexp.MustCompile("^```([a-z]*)\\s*$")
	marker = regexp.MustCompile(`^<!--\s*not runnable:(.*?)-->\s*$`)
)

// shellLangs are the fence languages of the blocks Read returns.
var shellLangs = []string{"sh", "shell", "bash", "console"}

// Files are README.md and docs/*.md under root, relative to it.
func Files(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		files = append(files, rel)
	}
	return files, nil
}

// ReadAll reads the blocks of Files(root), in file order.
func ReadAll(root string) ([]Block, error) {
	files, err := Files(root)
	if err != nil {
		return nil, err
	}
	var all []Block
	for _, f := range files {
		bs, err := Read(root, f)
		if err != nil {
			return nil, err
		}
		all = append(all, bs...)
	}
	return all, nil
}

// Read reads the shell and console blocks of file (relative to root).
func Read(root, file string) ([]Block, error) {
	f, err := os.Open(filepath.Join(root, file))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var (
		out     []Block
		prev    string
		cur     *Block
		body    []string
		inOther bool
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.Commands = commands(cur.Lang, body)
			out = append(out, *cur)
			cur, body = nil, nil
		case cur != nil:
			body = append(body, line)
		case inOther && strings.TrimSpace(line) == "```":
			inOther = false
		case inOther:
		default:
			if m := fence.FindStringSubmatch(line); m != nil {
				if slices.Contains(shellLangs, m[1]) {
					cur = &Block{File: file, Line: n, Lang: m[1]}
					if mm := marker.FindStringSubmatch(strings.TrimSpace(prev)); mm != nil {
						cur.Marked, cur.NotRunnable = true, strings.TrimSpace(mm[1])
					}
				} else {
					inOther = true
				}
			}
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: the block is not closed", file, cur.Line)
	}
	return out, nil
}

// commands splits a block's lines into commands: in a console block, the lines after
// "$ " and the output after each; in a shell block, every line that is not a comment.
// A line ending in \ or | goes on with the next.
func commands(lang string, lines []string) []Command {
	var out []Command
	var cmd *Command
	cont := false
	for _, l := range lines {
		if cont && cmd != nil {
			cmd.Line += "\n" + l
			cont = continues(l)
			continue
		}
		trimmed := strings.TrimSpace(l)
		if lang == "console" {
			switch {
			case strings.HasPrefix(l, "$ "):
				out = append(out, Command{Line: strings.TrimPrefix(l, "$ ")})
				cmd = &out[len(out)-1]
				cont = continues(l)
			case trimmed == "":
				cmd = nil
			case cmd != nil:
				cmd.Output = append(cmd.Output, l)
			}
			continue
		}
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		out = append(out, Command{Line: l})
		cmd = &out[len(out)-1]
		cont = continues(l)
	}
	for i := range out {
		out[i].Line, out[i].Comment = splitComment(out[i].Line)
	}
	return out
}

func continues(l string) bool {
	t := strings.TrimRight(l, " \t")
	return strings.HasSuffix(t, "\\") || strings.HasSuffix(t, "|")
}

// trailingComment is a comment after a command: "#" after two spaces or more, as the
// docs write them (a "#" inside a command, as in a URL's fragment, has none before it).
var trailingComment = regexp.MustCompile(`\s{2,}#\s?(.*)$`)

func splitComment(line string) (cmd, comment string) {
	lines := strings.Split(line, "\n")
	last := lines[len(lines)-1]
	if loc := trailingComment.FindStringSubmatchIndex(last); loc != nil {
		comment = last[loc[2]:loc[3]]
		lines[len(lines)-1] = last[:loc[0]]
	}
	return strings.TrimSpace(strings.Join(lines, "\n")), comment
}
