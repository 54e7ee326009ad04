package docscheck

import (
	"strings"
	"testing"

	"github.com/quotagate/quotagate/hack/docscheck/blocks"
)

// Every shell and console block in README.md and docs/*.md is run by a test or says
// why it cannot be: a block without a `<!-- not runnable: reason -->` marker before its
// fence is run by hack/docscheck/live against a local control plane with quotagate
// installed, which runs kubectl and the plugin only; so an unmarked block holds kubectl
// commands and no placeholders.
func TestCommandBlocksRunOrSayWhyNot(t *testing.T) {
	all, err := blocks.ReadAll(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	runnable := 0
	for _, b := range all {
		if b.Marked {
			if len(b.NotRunnable) < 10 {
				t.Errorf("%s: a block marked not runnable says why in a sentence, not %q", b.Pos(), b.NotRunnable)
			}
			continue
		}
		runnable++
		if len(b.Commands) == 0 {
			t.Errorf("%s: an unmarked %s block has no command to run", b.Pos(), b.Lang)
		}
		for _, c := range b.Commands {
			if !strings.HasPrefix(c.Line, "kubectl ") {
				t.Errorf("%s: `%s` is not a kubectl command, which hack/docscheck/live cannot run: mark the block <!-- not runnable: why -->", b.Pos(), c.Line)
			}
			if strings.ContainsAny(c.Line, "<>") {
				t.Errorf("%s: `%s` has a placeholder: mark the block <!-- not runnable: why -->", b.Pos(), c.Line)
			}
		}
	}
	if len(all) < 40 || runnable == 0 {
		t.Errorf("read %d blocks, %d runnable: the reader misses the docs' blocks", len(all), runnable)
	}
}
