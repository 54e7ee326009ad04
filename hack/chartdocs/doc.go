// Command chartdocs writes two parts of charts/quotagate/README.md so that they cannot go
// stale: the values table, from the comments in charts/quotagate/values.yaml, and the
// inventory ("What it installs"), from the chart rendered with the Helm SDK.
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
//
// The inventory renders the chart (tools/chartrender) with the defaults and with each
// setting of Renderings (the admission modes, cert-manager or not, visibility, the
// Prometheus options, every value that adds or takes away an object) and lists every
// object once: when it is rendered ("always", "with a; unless b", from the settings of
// the renderings that have it and lack it), and what it is for, from purposes.go, with a
// role's rules from the role. An object purposes.go does not describe, or a description
// of an object no rendering has, fails the run. The table replaces what lies between
// InventoryBeginMarker and InventoryEndMarker.
package main
