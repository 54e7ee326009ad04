// Package ui serves quotagate's live queue page: `kubectl quotagate ui` runs it on the
// user's own machine with the user's own kubeconfig, so the page shows exactly what the
// user's RBAC lets them read, and nothing in the cluster gains a new way in.
//
// What it serves (docs/ui.md has the user's view):
//
//   - / : for one namespace, first the head of each of its Budgets' queues; then the
//     budget tree (ClusterBudgets, the budgets that name them as parent, the
//     namespace's Budgets), each resource's used, hard, borrowed and lent (per flavor
//     too, for a budget with spec.flavors), its windows, its hour budget
//     (spec.usageLimits, with what status.usage says was used of it), the state and the
//     problems its conditions report, and throughput and waits over the last hour,
//     charted in SVG;
//   - /budgets/NAMESPACE/NAME and /clusterbudgets/NAME : one budget and a page of its
//     queue in admission order, read from the visibility API (visibility.quotagate.io);
//   - /pods?q=&ns= : the pods the user may list, searched by name, a page at a time;
//   - /pods/NAMESPACE/NAME : one pod: why it waits (the plugin's `why`, given as
//     Options.Why), its history (created, gated, admitted, scheduled, running, done) and
//     its events.
//
// Every page is rendered on the server (html/template; the assets are embedded in the
// binary, so it works offline). The page's script opens one Server-Sent
// Events stream for the view it shows; the server pushes that view again, rendered,
// whenever the watches (Budgets, ClusterBudgets and pods, through controller-runtime's
// cache with the user's rest config) report a change, at most once per
// Options.Coalesce (200 ms by default): a burst of pod events becomes one push.
//
// Security: it listens on loopback unless told otherwise; every request must carry the
// random token printed in the URL (then kept in an HttpOnly, SameSite=Strict cookie
// named after the port), and on loopback the Host header must name the loopback
// address, so neither a page of another site nor DNS rebinding can read it. It serves
// only GET: there is nothing to change through it.
package ui
