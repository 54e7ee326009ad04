// Package charts holds quotagate's Helm chart (charts/quotagate). Its tests render the chart
// with the Helm SDK, the way `helm install` would, and check what a cluster operator relies
// on: the webhook's scope and TLS wiring, the guards, RBAC, the values schema, and that
// the kustomize config (config/default) builds and installs the same pieces.
package charts
