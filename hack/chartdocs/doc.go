// Command chartdocs writes the values table of charts/quotagate/README.md from the comments
// in charts/quotagate/values.yaml, so that the table cannot go stale.
//
// `make manifests` runs it (after chartsync) as `go run ./hack/chartdocs`; `make verify`
// then fails on any diff under charts/, and the package's tests fail when the README in
// the tree is not what chartdocs would write.
//
// Every key of values.yaml becomes a row: its dotted path, its default and the comment
// above it. A mapping is broken down into rows of its keys when any of its keys has a
// comment (webhook, webhook.podDisruptionBudget); otherwise it is one row with its whole
// default (resources, podSecurityContext). The table replaces what lies between the lines
// BeginMarker and EndMarker in the README.
package main
