// Package app is the kubectl-quotagate plugin: cobra commands that read Budgets,
// ClusterBudgets and pods through the API server, and the manager's queue snapshot
// (/debug/queues), and print them as tables or JSON.
//
// Each command is a thin edge over pure rendering functions (budgets.go, queue.go,
// why.go) that take the objects and the snapshot and return text, so tests compare
// whole outputs. Where the snapshot cannot be read, commands that need only the API
// still print what they can, with a note saying what is missing and why.
package app
