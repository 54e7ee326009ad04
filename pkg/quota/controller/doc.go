// Package controller connects the quota core (package quota) to the API server.
//
// Informers for pods, namespaces, Budgets and ClusterBudgets feed the core as events
// arrive; the admission loop, which runs only on the elected leader and only after every
// informer has delivered its initial list, asks the core for admissions and hands them
// to a pool of workers that remove the gate with one JSON patch per pod, after pinning
// the ResourceClaims the pod is charged for (claimPins). Budget status, pod events
// and metrics are written from what the core reports.
//
// The controller never decides anything about quota itself: it translates.
package controller
