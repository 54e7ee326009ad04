// Package app is the kubectl-quotagate plugin: cobra commands that read Budgets,
// ClusterBudgets and pods through the API server, the budgets' queues through the
// visibility API (or the manager's snapshot, /debug/queues), and print them as kubectl
// does: tables, or any -o of k8s.io/cli-runtime's printers (output.go).
//
// Each command is a thin edge over pure rendering functions (budgets_print.go,
// queue.go, why.go, usage.go) that take the objects and return text, so tests compare
// whole outputs. Where the snapshot cannot be read, commands that need only the API
// still print what they can, with a note saying what is missing and why.
//
// Beyond the commands: completion.go answers shell completion (kubectl runs
// kubectl_complete-quotagate, which runs the plugin's __complete); watch.go is what -w
// shares (list, then watch from the list's resourceVersion); usage_read.go decides
// which pods a budget charges with the manager's own admission core; Run prints
// errors as kubectl does.
package app
