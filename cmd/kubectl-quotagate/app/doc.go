// Package app is the kubectl-quotagate plugin: cobra commands that read Budgets,
// ClusterBudgets and pods through the API server, the budgets' queues through the
// visibility API (or the manager's snapshot, /debug/queues), and print them as kubectl
// does: tables, or any -o of k8s.io/cli-runtime's printers (output.go).
//
// Each command is a thin edge over pure rendering functions (budgets_print.go,
// queue.go, why.go) that take the objects and return text, so tests compare whole
// outputs. Where the snapshot cannot be read, commands that need only the API
// still print what they can, with a note saying what is missing and why.
package app
