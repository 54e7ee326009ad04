// Package live runs the shell and console blocks of README.md and docs/*.md that are not
// marked `<!-- not runnable: reason -->` (hack/docscheck/blocks) against a local control
// plane with quotagate installed by its chart, as a reader would type them: kubectl, and
// the plugin built from the checkout on the PATH. Where a console block shows output, the
// output must have its shape: a table's header, an error's words, a text's lines by what
// they begin with (times, counts and positions differ from run to run). The package is
// its test.
package live
