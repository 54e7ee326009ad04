package ui

import (
	"bytes"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
)

// timeAt is now plus d, as the visibility API gives times.
func timeAt(d time.Duration) *metav1.Time {
	t := metav1.NewTime(now.Add(d))
	return &t
}

// TestPagesRender renders every view as a whole page and checks what a user reads in
// it: the text alternatives of the bars, the queue's order, the pod's way, the notes.
func TestPagesRender(t *testing.T) {
	tmpl, err := parseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	b := budget("team-a", "quota", "org", cpu("4"), cpu("3"))
	tree := budgetTree([]v1alpha1.Budget{b}, []v1alpha1.ClusterBudget{clusterBudget("org", "")}, "")
	pod := statsPod("a-2", -10*time.Minute, -time.Minute, -50*time.Second, false)
	u, _ := url.Parse("/budgets/team-a/quota")
	flavored := budget("team-a", "gpus", "", cpu("16"), nil)
	flavored.Status.Flavors = []v1alpha1.FlavorStatus{
		{Name: "h100", Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("2")}, Used: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("1")}},
		{Name: "spot"},
	}
	hourly := budget("team-a", "quota", "", cpu("4"), nil)
	hourly.Spec.UsageLimits = &v1alpha1.UsageLimits{Period: v1alpha1.PeriodMonth,
		Hours: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("10"), "requests.nvidia.com/gpu": resource.MustParse("2")}}
	hourly.Status.Usage = &v1alpha1.UsageStatus{Period: "2026-12", ResetAt: timeAt(30 * 24 * time.Hour),
		Used: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("3.5"), "requests.nvidia.com/gpu": resource.MustParse("2")}}
	tests := map[string]struct {
		v    *view
		want []string
	}{
		"overview": {
			v: &view{Kind: "overview", Title: "Budgets", Tree: tree, Namespaces: []string{"team-a", "team-b"}, NS: "team-a",
				Stats: lastHour([]*corev1.Pod{pod}, now), Notes: []string{"You may not list pods in every namespace (-A)"}},
			want: []string{"ClusterBudget org", `href="/budgets/team-a/quota"`, "requests.cpu: 3 of 4 used", `<meter min="0" max="100" value="75"`,
				`<option value="team-a" selected>`, "1</strong> pods admitted", "You may not list pods in every namespace (-A)"},
		},
		"a namespace's overview": {
			v: &view{Kind: "overview", Title: "Budgets", Tree: tree, NS: "team-a", Scope: "team-a", Stats: lastHour([]*corev1.Pod{pod}, now),
				NSQueues: []nsQueue{{ID: "b-team-a-quota", Title: "Budget team-a/quota", Link: "/budgets/team-a/quota", Total: 12,
					Rows: []queueRow{{Position: 1, Namespace: "team-a", Name: "a-2", Reason: "requests.cpu: 1 requested, 0 free"}}}}},
			want: []string{`<h1 id="ns-queues-h">Waiting in team-a</h1>`,
				`<h2 id="q-b-team-a-quota-h"><a href="/budgets/team-a/quota">Budget team-a/quota</a>: 12 gated, the first 1</h2>`,
				`<tr data-pod="team-a/a-2"><td>1</td>`, "<h2>Budgets in team-a</h2>",
				`<svg id="hour-chart" role="img" aria-labelledby="hour-chart-title hour-chart-desc"`,
				`<desc id="hour-chart-desc">Admitted per 5 minutes, with the median wait: `},
		},
		"budget": {
			v: &view{Kind: "budget", Title: "Budget team-a/quota", Budget: budgetViewOf(&b), QueueTotal: 2,
				Queue:  []queueRow{{Position: 1, Namespace: "team-a", Name: "a-2", Reason: "requests.cpu: 1 requested, 0 free"}, {Position: 2, Namespace: "team-a", Name: "a-3"}},
				Paging: pagingOf(u, 0, podPageSize, 2, 2), Scope: "team-a"},
			want: []string{`<tr data-pod="team-a/a-2"><td>1</td>`, `<tr data-pod="team-a/a-3"><td>2</td>`, "1–2 of 2", "requests.cpu: 1 requested, 0 free",
				"Namespace <strong>team-a</strong>"},
		},
		"a queue with estimates": {
			v: &view{Kind: "budget", Title: "Budget team-a/quota", Budget: budgetViewOf(&b), QueueTotal: 3, Now: now,
				Queue: queueRows(&visv1.PendingPodList{Total: 3, Items: []visv1.PendingPod{
					{Position: 1, Namespace: "team-a", Name: "a-2", EstimatedStart: &visv1.EstimatedStart{
						Median: timeAt(12 * time.Minute), Low: timeAt(10 * time.Minute), High: timeAt(25 * time.Minute), Ends: 2}},
					{Position: 2, Namespace: "team-a", Name: "a-3", EstimatedStart: &visv1.EstimatedStart{
						Unknown: "NoHistory", Message: "it waits for quota held by pods with no expected end"}},
					{Position: 3, Namespace: "team-a", Name: "a-4"},
				}}, now),
				Paging: pagingOf(u, 0, podPageSize, 3, 3), Scope: "team-a"},
			want: []string{`<th scope="col">Estimated start</th>`,
				`<td class="eta"><time datetime="2026-12-02T12:12:00Z" title="Estimated start ` + localClock(now.Add(12*time.Minute)) +
					`, between ` + localClock(now.Add(10*time.Minute)) + ` and ` + localClock(now.Add(25*time.Minute)) + `, after 2 pod ends">in 12m</time>`,
				`<span title="it waits for quota held by pods with no expected end">unknown: NoHistory</span>`,
				`<span class="visually-hidden">: it waits for quota held by pods with no expected end</span>`,
				`>no estimate</span>`},
		},
		"a gated pod's estimate": {
			v: &view{Kind: "pod", Title: "Pod team-a/a-2", Now: now, Pod: &podPage{Namespace: "team-a", Name: "a-2", State: stateGated,
				Start: &startView{Text: "in 1h", DateTime: "2026-12-02T13:00:00Z", Title: "Estimated start 2026-12-02 13:00 UTC"}}},
			want: []string{`<p id="pod-eta"><strong>Estimated start:</strong> <time datetime="2026-12-02T13:00:00Z">in 1h</time>. Estimated start 2026-12-02 13:00 UTC</p>`},
		},
		"a flavored budget": {
			v: &view{Kind: "budget", Title: "Budget team-a/gpus", Budget: budgetViewOf(&flavored), Scope: "team-a"},
			want: []string{`<li class="flavor" data-flavor="h100"><span class="flavor-name">Flavor h100</span>`,
				"requests.nvidia.com/gpu on flavor h100: 1 of 2 used", `<meter min="0" max="100" value="50"`,
				`<li class="flavor" data-flavor="spot"><span class="flavor-name">Flavor spot</span>: no hard of its own, only the budget's</li>`},
		},
		"a budget with an hour budget": {
			v: &view{Kind: "budget", Title: "Budget team-a/quota", Budget: budgetViewOf(&hourly), Scope: "team-a"},
			want: []string{`<ul class="hours" aria-label="Hour budget">`,
				"<li>requests.cpu: 3.5 of 10 resource-hours used in 2026-12; resets " + localClock(now.Add(30*24*time.Hour)) + "</li>",
				`<li class="exhausted">requests.nvidia.com/gpu: 2 of 2 resource-hours used in 2026-12; exhausted until ` + localClock(now.Add(30*24*time.Hour)) + "</li>"},
		},
		"queue refused": {
			v:    &view{Kind: "budget", Title: "ClusterBudget org", Budget: tree[0], QueueNote: "You may not see this ClusterBudget's queue"},
			want: []string{"You may not see this ClusterBudget&#39;s queue"},
		},
		"pod": {
			v: &view{Kind: "pod", Title: "Pod team-a/a-2", Now: now, Pod: &podPage{Namespace: "team-a", Name: "a-2", State: stateRunning,
				Why: "Pod team-a/a-2 was admitted at ...", History: podHistory(pod),
				Events: []corev1.Event{{Reason: "Admitted", Message: "admitted after 9m", Type: "Normal", LastTimestamp: metav1.NewTime(now)}}}},
			want: []string{`<pre id="why">Pod team-a/a-2 was admitted at ...</pre>`, "<strong>Admitted</strong>", "gate removed after waiting 9m", "admitted after 9m"},
		},
		"a repeated event": {
			v: &view{Kind: "pod", Title: "Pod team-a/a-2", Now: now, Pod: &podPage{Namespace: "team-a", Name: "a-2", State: stateGated,
				Events: []corev1.Event{{Reason: "Waiting", Message: "position 7 of 8", Type: "Normal",
					EventTime: metav1.NewMicroTime(now.Add(-time.Hour)),
					Series:    &corev1.EventSeries{Count: 9, LastObservedTime: metav1.NewMicroTime(now.Add(-time.Minute))}}}}},
			want: []string{"<td>" + localClock(now.Add(-time.Minute)) + "</td><td>Normal</td><td>Waiting</td>"},
		},
		"not found": {
			v:    &view{Kind: "pod", Title: "Pod team-a/gone", NotFound: "No pod team-a/gone is in the watch"},
			want: []string{"No pod team-a/gone is in the watch"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := tmpl.ExecuteTemplate(&out, "page", tc.v); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the page lacks %q:\n%s", w, out.String())
				}
			}
			if tc.v.Kind == "overview" {
				html := out.String()
				if n := strings.Count(html, `<rect class="bar"`); n != statsBuckets {
					t.Errorf("the chart has %d bars, want one per 5 minutes, %d", n, statsBuckets)
				}
				// A namespace's queue comes first, the budget tree after it.
				if q, tree := strings.Index(html, "Waiting in"), strings.Index(html, `id="budget-tree"`); tc.v.NSQueues != nil && (q < 0 || q > tree) {
					t.Errorf("the queue of %s is not above the budget tree", tc.v.NS)
				}
			}
		})
	}
}

// An estimate is shown as the time until its median, "due now" once the median is less
// than a second away (its times are whole seconds, rounded), "unknown: <why>" when the manager cannot estimate it, and "no estimate" when
// it has none.
func TestStartOf(t *testing.T) {
	tests := map[string]struct {
		e    *visv1.EstimatedStart
		want string
	}{
		"known":                         {e: &visv1.EstimatedStart{Median: timeAt(90 * time.Minute), Low: timeAt(90 * time.Minute), High: timeAt(90 * time.Minute)}, want: "in 90m"},
		"in two days":                   {e: &visv1.EstimatedStart{Median: timeAt(49 * time.Hour)}, want: "in 2d1h"},
		"past due":                      {e: &visv1.EstimatedStart{Median: timeAt(-time.Minute)}, want: "due now"},
		"rounded up to the next second": {e: &visv1.EstimatedStart{Median: timeAt(400 * time.Millisecond)}, want: "due now"},
		"a second away":                 {e: &visv1.EstimatedStart{Median: timeAt(time.Second)}, want: "in 1s"},
		"unknown":                       {e: &visv1.EstimatedStart{Unknown: "BudgetClosed", Message: "Budget team-a/quota is Closed"}, want: "unknown: BudgetClosed"},
		"no estimate":                   {want: "no estimate"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := startOf(tc.e, now).Text; got != tc.want {
				t.Errorf("shown as %q, want %q", got, tc.want)
			}
		})
	}
}
