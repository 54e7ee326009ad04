package ui

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
)

// A view is what one URL shows: the overview, a budget and a page of its queue, the
// pod list, or one pod. The same data renders the whole page (servePage) and, pushed
// over the event stream, the page's <main> again (serveEvents).

// view is the data of every template.
type view struct {
	// Kind names the view's template: overview, budget, pods, pod.
	Kind  string
	Title string
	// Scope is the namespace the page is for, "" for every namespace.
	Scope string
	// NS is the namespace filter, Q the pod name searched for.
	NS, Q      string
	Namespaces []string
	// Notes are what the user may not see, and why.
	Notes   []string
	Version uint64
	Now     time.Time

	Tree  []*budgetView
	Stats hourStats
	// NSQueues are the queues of the namespace's Budgets, which the overview of one
	// namespace shows first: what a tenant opens the page for.
	NSQueues []nsQueue

	Budget     *budgetView
	QueueNote  string
	Queue      []queueRow
	QueueTotal int64

	Pods     []podRow
	PodTotal int

	Pod      *podPage
	Paging   paging
	NotFound string
}

// queueRow is one pod of a queue's page.
type queueRow struct {
	Position  int64
	Namespace string
	Name      string
	Priority  int32
	Waiting   string
	Queue     string
	Reason    string
	Group     string
	Start     startView
}

// Link is the pod's page.
func (r queueRow) Link() string { return podLink(r.Namespace, r.Name) }

func podLink(ns, name string) string {
	return "/pods/" + url.PathEscape(ns) + "/" + url.PathEscape(name)
}

// paging links the pages of a list: positions From to To of Total.
type paging struct {
	From, To, Total int64
	Prev, Next      string
}

// pagingOf is the paging of page (0-based) of a list of total items, size a page,
// with links to the neighbours of u.
func pagingOf(u *url.URL, page, size int, shown, total int64) paging {
	p := paging{From: int64(page*size) + 1, To: int64(page*size) + shown, Total: total}
	if shown == 0 {
		p.From = 0
	}
	link := func(n int) string {
		q := u.Query()
		if n == 0 {
			q.Del("page")
		} else {
			q.Set("page", strconv.Itoa(n+1))
		}
		v := url.URL{Path: u.Path, RawQuery: q.Encode()}
		return v.RequestURI()
	}
	if page > 0 {
		p.Prev = link(page - 1)
	}
	if p.To < total {
		p.Next = link(page + 1)
	}
	return p
}

// pageNumber is the 0-based page the query asks for (?page=N counts from 1).
func pageNumber(q url.Values) int {
	n, err := strconv.Atoi(q.Get("page"))
	if err != nil || n < 1 {
		return 0
	}
	return n - 1
}

// podPage is what one pod's page shows.
type podPage struct {
	Namespace, Name, State string
	Why, WhyNote           string
	// Start is a gated pod's estimated start; StartNote says why it could not be read.
	Start      *startView
	StartNote  string
	History    []historyStep
	Events     []corev1.Event
	EventsNote string
}

// render builds the view that u shows, and the HTTP status to answer with.
func (s *Server) render(ctx context.Context, u *url.URL) (*view, int) {
	version, _ := s.notifier.current()
	q := u.Query()
	v := &view{Scope: s.o.Namespace, NS: q.Get("ns"), Q: q.Get("q"), Version: version, Now: s.o.Now()}
	if s.o.Namespace != "" {
		v.NS = s.o.Namespace
	}
	v.Notes = s.accessNotes()
	budgets, clusterBudgets := s.store.budgets(ctx)
	pods := s.store.allPods(ctx)
	v.Namespaces = namespacesOf(budgets, pods, s.o.Namespace)
	status := http.StatusOK
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i, p := range parts {
		if un, err := url.PathUnescape(p); err == nil {
			parts[i] = un
		}
	}
	switch {
	case u.Path == "/" || u.Path == "":
		v.Kind, v.Title = "overview", "Budgets"
		v.Tree = budgetTree(budgets, clusterBudgets, v.NS)
		if v.NS != "" {
			pods = slices.DeleteFunc(slices.Clone(pods), func(p *corev1.Pod) bool { return p.Namespace != v.NS })
		}
		v.Stats = lastHour(pods, v.Now)
		if v.NS != "" {
			v.NSQueues = s.namespaceQueues(ctx, budgets, v.NS, v.Now)
		}
	case len(parts) == 1 && parts[0] == "pods":
		v.Kind, v.Title = "pods", "Pods"
		page := pageNumber(q)
		v.Pods, v.PodTotal = podList(pods, v.NS, v.Q, page, v.Now)
		v.Paging = pagingOf(u, page, podPageSize, int64(len(v.Pods)), int64(v.PodTotal))
	case len(parts) == 3 && parts[0] == "pods":
		v.Kind, v.Title = "pod", "Pod "+parts[1]+"/"+parts[2]
		v.Pod = s.podPage(ctx, parts[1], parts[2])
		if v.Pod == nil {
			status, v.NotFound = http.StatusNotFound, fmt.Sprintf("No pod %s/%s is in the watch: it does not exist, or you may not list pods in namespace %s.", parts[1], parts[2], parts[1])
		}
	case len(parts) == 3 && parts[0] == "budgets":
		v.Kind, v.Title = "budget", "Budget "+parts[1]+"/"+parts[2]
		for i := range budgets {
			if budgets[i].Namespace == parts[1] && budgets[i].Name == parts[2] {
				v.Budget = budgetViewOf(&budgets[i])
			}
		}
		s.queue(ctx, v, u, "Budget", parts[1], parts[2])
	case len(parts) == 2 && parts[0] == "clusterbudgets":
		v.Kind, v.Title = "budget", "ClusterBudget "+parts[1]
		for i := range clusterBudgets {
			if clusterBudgets[i].Name == parts[1] {
				v.Budget = clusterBudgetViewOf(&clusterBudgets[i])
			}
		}
		s.queue(ctx, v, u, "ClusterBudget", "", parts[1])
	default:
		v.Kind, v.Title = "notfound", "Not found"
		status, v.NotFound = http.StatusNotFound, "This page does not exist."
	}
	if v.Kind == "budget" && v.Budget == nil {
		status = http.StatusNotFound
		v.NotFound = fmt.Sprintf("No %s is in the watch: it does not exist, or you may not list it.", v.Title)
	}
	return v, status
}

// accessNotes say which kinds the user may not list.
func (s *Server) accessNotes() []string {
	var notes []string
	a := s.store.access
	if a.budgets != nil {
		notes = append(notes, explainAccess("Budgets", s.o.Namespace, a.budgets))
	}
	if a.clusterBudgets != nil {
		notes = append(notes, explainAccess("ClusterBudgets", s.o.Namespace, a.clusterBudgets))
	}
	if a.pods != nil {
		notes = append(notes, explainAccess("pods", s.o.Namespace, a.pods))
	}
	return notes
}

// nsQueue is the head of one Budget's queue on the overview of its namespace.
type nsQueue struct {
	ID, Title, Link string
	Rows            []queueRow
	Total           int64
	Note            string
}

// nsQueueRows is how many pods of each queue the overview shows; the budget's page
// pages through the rest.
const nsQueueRows = 10

// namespaceQueues reads the head of the queue of every Budget of namespace ns that
// has gated pods, by name, from the visibility API as the budget's page does; a Budget
// with nothing gated is left to the tree below.
func (s *Server) namespaceQueues(ctx context.Context, budgets []v1alpha1.Budget, ns string, now time.Time) []nsQueue {
	var out []nsQueue
	for i := range budgets {
		b := &budgets[i]
		if b.Namespace != ns || b.Status.GatedPods == 0 {
			continue
		}
		bv := budgetViewOf(b)
		q := nsQueue{ID: bv.ID(), Title: bv.Title(), Link: bv.Link()}
		l, err := s.pages(ctx, "Budget", b.Namespace, b.Name, 0, nsQueueRows)
		if err != nil {
			q.Note = explainQueueError("Budget", ns, err)
		} else {
			q.Rows, q.Total = queueRows(l, now), l.Total
		}
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b nsQueue) int { return strings.Compare(a.Title, b.Title) })
	return out
}

// queue reads the page of the budget's queue that u asks for into v.
func (s *Server) queue(ctx context.Context, v *view, u *url.URL, kind, ns, name string) {
	page := pageNumber(u.Query())
	l, err := s.pages(ctx, kind, ns, name, page*podPageSize, podPageSize)
	if err != nil {
		v.QueueNote = explainQueueError(kind, ns, err)
		return
	}
	v.QueueTotal = l.Total
	v.Queue = queueRows(l, v.Now)
	v.Paging = pagingOf(u, page, podPageSize, int64(len(v.Queue)), l.Total)
}

func queueRows(l *visv1.PendingPodList, now time.Time) []queueRow {
	rows := make([]queueRow, len(l.Items))
	for i, p := range l.Items {
		rows[i] = queueRow{Position: p.Position, Namespace: p.Namespace, Name: p.Name, Priority: p.Priority,
			Waiting: humanDuration(time.Duration(p.WaitingSeconds) * time.Second), Queue: p.Queue, Reason: p.Reason, Group: p.Group,
			Start: startOf(p.EstimatedStart, now)}
	}
	return rows
}

// podPage reads what the pod's page shows: the pod from the watch, its explanation,
// and its events (listed now: only open pod pages read them).
func (s *Server) podPage(ctx context.Context, ns, name string) *podPage {
	p := s.store.pod(ctx, ns, name)
	if p == nil {
		return nil
	}
	pp := &podPage{Namespace: ns, Name: name, State: podState(p), History: podHistory(p)}
	if pp.State == stateGated {
		pp.Start, pp.StartNote = s.estimatedStart(ctx, ns, name)
	}
	if s.o.Why != nil {
		why, err := s.o.Why(ctx, ns, name)
		pp.Why = why
		if err != nil {
			pp.WhyNote = err.Error()
		}
	}
	var events corev1.EventList
	if err := s.direct.List(ctx, &events, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": name}); err != nil {
		pp.EventsNote = fmt.Sprintf("The pod's events are not shown: %v", err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.UID == p.UID {
			pp.Events = append(pp.Events, e)
		}
	}
	slices.SortStableFunc(pp.Events, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	return pp
}

// estimatedStart reads a gated pod's estimated start from the visibility API; when it
// cannot, it says why instead.
func (s *Server) estimatedStart(ctx context.Context, ns, name string) (*startView, string) {
	st, err := s.podStatus(ctx, ns, name)
	if err != nil {
		return nil, fmt.Sprintf("The estimated start is not shown: %v", err)
	}
	v := startOf(st.EstimatedStart, s.o.Now())
	return &v, ""
}

// eventTime is when an event was last seen: a series' last observation (events.k8s.io
// recorders, quotagate's among them, count repeats there and leave lastTimestamp unset),
// else the last timestamp of the old API, else when it happened or was created.
func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// namespacesOf are the namespaces of the budgets and pods, for the namespace filter;
// just scope when the page is for one namespace.
func namespacesOf(budgets []v1alpha1.Budget, pods []*corev1.Pod, scope string) []string {
	if scope != "" {
		return []string{scope}
	}
	seen := map[string]bool{}
	for i := range budgets {
		seen[budgets[i].Namespace] = true
	}
	for _, p := range pods {
		seen[p.Namespace] = true
	}
	out := make([]string, 0, len(seen))
	for ns := range seen {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out
}

// servePage answers a view as a whole page.
func (s *Server) servePage(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/" && r.URL.Query().Get("q") != "" {
		// The search box searches pods, from any view.
		q := url.Values{"q": {r.URL.Query().Get("q")}}
		if ns := r.URL.Query().Get("ns"); ns != "" {
			q.Set("ns", ns)
		}
		http.Redirect(w, r, "/pods?"+q.Encode(), http.StatusSeeOther)
		return
	}
	v, status := s.render(r.Context(), r.URL)
	var b bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&b, "page", v); err != nil {
		http.Error(w, "rendering the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}
