// Package docscheck holds the tests that check quotagate's documentation against the
// code, so that a renamed field, metric, flag or chart value fails `make test` instead of
// waiting for a reader:
//
//   - every `kubectl get budget ... -o jsonpath='{...}'` and every spec./status. field the
//     docs name exists in the CRD schema (config/crd/bases), and an enum value written as
//     `status.state: Closed` is one of the schema's (fields_test.go);
//   - every quotagate_* metric in the docs, the chart's PrometheusRule and its Grafana
//     dashboard is one the manager or the webhook registers, built by the same
//     constructors the binaries call, and docs/metrics.md lists each of them with its
//     labels (metrics_test.go);
//   - every --flag in the docs is a flag of a quotagate binary (built from the commands
//     the binaries run) or of a tool the docs name, and the flags of a `manager ...` or
//     `webhook ...` command line are that binary's (flags_test.go);
//   - every chart value the docs name (`--set a.b=`, `a.b` in backticks, .Values.a.b in
//     NOTES.txt) exists in values.yaml (values_test.go);
//   - every shell and console block of README.md and docs/*.md is either marked
//     `<!-- not runnable: reason -->` or made of kubectl commands, which
//     hack/docscheck/live runs against a local control plane with quotagate installed,
//     comparing the output a block shows (commands_test.go, package blocks).
//
// A failure names the file and line of the text that is wrong, and what it names that
// does not exist. The package has no code of its own: it is its tests.
package docscheck
