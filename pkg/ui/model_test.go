package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
)

func budget(ns, name, parent string, hard, used corev1.ResourceList) v1alpha1.Budget {
	return v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:   v1alpha1.BudgetSpec{Parent: parent, Hard: hard},
		Status: v1alpha1.BudgetStatus{State: v1alpha1.StateOpen, Hard: hard, Used: used}}
}

func clusterBudget(name, parent string) v1alpha1.ClusterBudget {
	return v1alpha1.ClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ClusterBudgetSpec{BudgetSpec: v1alpha1.BudgetSpec{Parent: parent}}}
}

func cpu(s string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(s)}
}

// names lists the tree depth-first, indented by level.
func names(level []*budgetView, indent string) []string {
	var out []string
	for _, b := range level {
		out = append(out, indent+b.Title())
		out = append(out, names(b.Children, indent+"  ")...)
	}
	return out
}

func TestBudgetTree(t *testing.T) {
	budgets := []v1alpha1.Budget{
		budget("team-b", "quota", "org", nil, nil),
		budget("team-a", "quota", "org", nil, nil),
		budget("team-a", "solo", "", nil, nil),
		budget("team-c", "lost", "no-such-parent", nil, nil),
	}
	cbs := []v1alpha1.ClusterBudget{clusterBudget("org", "root"), clusterBudget("root", ""),
		clusterBudget("loop-a", "loop-b"), clusterBudget("loop-b", "loop-a")}
	tests := map[string]struct {
		ns   string
		want []string
	}{
		"every namespace": {want: []string{
			"ClusterBudget loop-a", "ClusterBudget loop-b", "ClusterBudget root",
			"  ClusterBudget org", "    Budget team-a/quota", "    Budget team-b/quota",
			"Budget team-a/solo", "Budget team-c/lost",
		}},
		"one namespace": {ns: "team-a", want: []string{
			"ClusterBudget loop-a", "ClusterBudget loop-b", "ClusterBudget root",
			"  ClusterBudget org", "    Budget team-a/quota",
			"Budget team-a/solo",
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := names(budgetTree(budgets, cbs, tc.ns), "")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tree (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResourceSummaries(t *testing.T) {
	b := budget("team-a", "quota", "", corev1.ResourceList{
		corev1.ResourceRequestsCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("10"),
	}, corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("5"), corev1.ResourcePods: resource.MustParse("3")})
	b.Status.Borrowed = cpu("1")
	b.Status.Pending = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}
	b.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionPodsNeverFit, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonRequestsExceedHard, Message: "pod team-a/big requests.cpu 8 > 4"}}
	v := budgetViewOf(&b)
	want := []resourceView{
		{Name: "pods", Used: "3", Hard: "10", Pending: "2", Percent: 30},
		{Name: "requests.cpu", Used: "5", Hard: "4", Borrowed: "1", Percent: 100, Over: true},
	}
	if diff := cmp.Diff(want, v.Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if got, want := v.Resources[1].Summary(), "requests.cpu: 5 of 4 used, 1 borrowed"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "requests.cpu 8 > 4") {
		t.Errorf("problems %q, want the PodsNeverFit message", v.Problems)
	}
}

// A flavored budget shows each flavor, in the order of status.flavors, with the
// resources its hard names, each summary naming the flavor; a flavor has no pending.
func TestFlavorViews(t *testing.T) {
	gpu := func(s string) corev1.ResourceList {
		return corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse(s)}
	}
	b := budget("team-a", "gpus", "", cpu("16"), cpu("3"))
	b.Status.Flavors = []v1alpha1.FlavorStatus{
		{Name: "h100", Hard: gpu("2"), Used: gpu("3"), Borrowed: gpu("1")},
		{Name: "a100", Hard: gpu("4"), Used: gpu("1"), Lent: gpu("2")},
		{Name: "spot"},
	}
	b.Status.Pending = gpu("5")
	v := budgetViewOf(&b)
	want := []flavorView{
		{Name: "h100", Resources: []resourceView{{Name: "requests.nvidia.com/gpu", Flavor: "h100", Used: "3", Hard: "2", Borrowed: "1", Percent: 100, Over: true}}},
		{Name: "a100", Resources: []resourceView{{Name: "requests.nvidia.com/gpu", Flavor: "a100", Used: "1", Hard: "4", Lent: "2", Percent: 25}}},
		{Name: "spot"},
	}
	if diff := cmp.Diff(want, v.Flavors); diff != "" {
		t.Errorf("flavors (-want +got):\n%s", diff)
	}
	var got []string
	for _, f := range v.Flavors {
		for _, r := range f.Resources {
			got = append(got, r.Summary())
		}
	}
	wantText := []string{"requests.nvidia.com/gpu on flavor h100: 3 of 2 used, 1 borrowed", "requests.nvidia.com/gpu on flavor a100: 1 of 4 used, 2 lent"}
	if diff := cmp.Diff(wantText, got); diff != "" {
		t.Errorf("summaries (-want +got):\n%s", diff)
	}
	plain := budget("team-a", "quota", "", cpu("4"), nil)
	if v := budgetViewOf(&plain); v.Flavors != nil {
		t.Errorf("a budget without flavors shows flavors %v", v.Flavors)
	}
}

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// statsPod is a pod created at created, admitted at admitted (not when zero) and
// scheduled at scheduled (not when zero), all as offsets from now.
func statsPod(name string, created, admitted, scheduled time.Duration, gated bool) *corev1.Pod {
	b := podtest.New(name).NS("team-a").At(now.Add(created)).Priority(0)
	if gated {
		b.Gated()
	}
	if admitted != 0 {
		b.Annotation(v1alpha1.AdmittedAtAnnotation, now.Add(admitted).Format(time.RFC3339)).AdmittedBy("team-a/quota")
	}
	if scheduled != 0 {
		b.Condition(corev1.PodScheduled, now.Add(scheduled))
	}
	return b.Obj()
}

func TestLastHour(t *testing.T) {
	pods := []*corev1.Pod{
		statsPod("old", -3*time.Hour, -2*time.Hour, -2*time.Hour, false),                      // admitted before the hour
		statsPod("a", -50*time.Minute, -40*time.Minute, -40*time.Minute+2*time.Second, false), // waited 10m
		statsPod("b", -20*time.Minute, -19*time.Minute, -19*time.Minute, false),               // waited 1m
		statsPod("c", -4*time.Minute, -2*time.Minute, 0, false),                               // waited 2m, not scheduled yet
		statsPod("gated", -time.Minute, 0, 0, true),
		statsPod("never-gated", -time.Minute, 0, 0, false),
	}
	s := lastHour(pods, now)
	if s.Admitted != 3 || s.Gated != 1 {
		t.Errorf("admitted %d, gated %d; want 3 and 1", s.Admitted, s.Gated)
	}
	var counts []int
	for _, b := range s.Buckets {
		counts = append(counts, b.Count)
	}
	if diff := cmp.Diff([]int{0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1}, counts); diff != "" {
		t.Errorf("admissions per 5 minutes (-want +got):\n%s", diff)
	}
	if got, want := s.Wait.Summary(), "median 2m, p90 10m, longest 10m (3 pods)"; got != want {
		t.Errorf("waits %q, want %q", got, want)
	}
	if got, want := s.Schedule.Summary(), "median 2s, p90 2s, longest 2s (2 pods)"; got != want {
		t.Errorf("scheduling %q, want %q", got, want)
	}

	// The chart: a bar per bucket, as high as its share of the fullest, and the line
	// through the median waits of the buckets that admitted pods, the longest at the top.
	c := s.Chart()
	var heights []int
	for _, b := range c.Bars {
		heights = append(heights, b.Height)
	}
	if diff := cmp.Diff([]int{0, 0, 0, 0, 130, 0, 0, 0, 130, 0, 0, 130}, heights); diff != "" {
		t.Errorf("bar heights (-want +got):\n%s", diff)
	}
	if got, want := c.WaitLine, "225,10 425,127 575,114"; got != want {
		t.Errorf("the wait line's points are %q, want %q (10m at the top, 1m and 2m in proportion)", got, want)
	}
	h := func(d time.Duration) string { return now.Add(d).Local().Format("15:04") }
	want := "Admitted per 5 minutes, with the median wait: " + h(-40*time.Minute) + ": 1 admitted, median wait 10m; " +
		h(-20*time.Minute) + ": 1 admitted, median wait 60s; " + h(-5*time.Minute) + ": 1 admitted, median wait 2m."
	if c.Summary != want {
		t.Errorf("the chart in words:\n%s\nwant\n%s", c.Summary, want)
	}
	if got := (hourStats{}).Chart().Summary; got != "No pod was admitted in the last hour." {
		t.Errorf("an empty hour's chart says %q", got)
	}
}

func TestPodHistory(t *testing.T) {
	p := statsPod("a", -50*time.Minute, -40*time.Minute, -39*time.Minute, false)
	p.Spec.NodeName = "kwok-node-0"
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = ptr.To(metav1.NewTime(now.Add(-38 * time.Minute)))
	var got []string
	for _, s := range podHistory(p) {
		got = append(got, fmt.Sprintf("%s %v", s.What, now.Sub(s.At)))
	}
	want := []string{"Created 50m0s", "Gated 50m0s", "Admitted 40m0s", "Scheduled 39m0s", "Running 38m0s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

func TestPodListPagesAndSearches(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 250 {
		pods = append(pods, statsPod(fmt.Sprintf("job-%03d", i), -time.Minute, 0, 0, true))
	}
	other := statsPod("job-x", -time.Minute, 0, 0, false)
	other.Namespace = "team-b"
	pods = append(pods, other)
	rows, total := podList(pods, "team-a", "JOB-1", 0, now)
	if total != 100 || len(rows) != 100 || rows[0].Name != "job-100" || rows[0].State != stateGated {
		t.Errorf("search JOB-1 in team-a: %d rows of %d, first %+v; want 100 of 100 from job-100, gated", len(rows), total, rows[0])
	}
	rows, total = podList(pods, "", "", 2, now)
	if total != 251 || len(rows) != 51 || rows[50].Namespace != "team-b" {
		t.Errorf("third page of every pod: %d rows of %d; want 51 of 251 ending in team-b", len(rows), total)
	}
}

// A budget's card says what its windows do, from its status: open ones and the next
// change, or when one opens; nothing without windows.
func TestWindowViews(t *testing.T) {
	at := time.Date(2026, 12, 7, 22, 0, 0, 0, time.UTC)
	clock := at.Local().Format("2006-01-02 15:04:05")
	for name, tc := range map[string]struct {
		open []string
		next *metav1.Time
		want string
	}{
		"none":          {want: ""},
		"one opens":     {next: &metav1.Time{Time: at}, want: "A window opens " + clock + " and changes what the budget may hold"},
		"one open":      {open: []string{"night"}, next: &metav1.Time{Time: at}, want: "Window night open; next change " + clock},
		"two open":      {open: []string{"night", "deadline"}, next: &metav1.Time{Time: at}, want: "Windows night, deadline open; next change " + clock},
		"open for good": {open: []string{"forever"}, want: "Window forever open"},
	} {
		t.Run(name, func(t *testing.T) {
			b := budget("team-a", "quota", "", cpu("4"), cpu("1"))
			b.Status.ActiveWindows, b.Status.NextWindowChange = tc.open, tc.next
			if got := budgetViewOf(&b).Windows; got != tc.want {
				t.Errorf("windows %q, want %q", got, tc.want)
			}
		})
	}
}

// A budget's card says, per resource of its hours, what was used and reserved of them
// as status.usage has it, and when that is forgotten: the reset of a calendar period,
// or how a rolling window or a half-life forgets; used and reserved at the hours, it
// says they are exhausted, and until when. Before the manager writes status.usage, the
// card shows the limit alone.
func TestHoursViews(t *testing.T) {
	resetAt := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	reset := resetAt.Local().Format("2006-01-02 15:04:05")
	month := &v1alpha1.UsageLimits{Hours: cpu("10"), Period: v1alpha1.PeriodMonth}
	inDecember := func(used, reserved string) *v1alpha1.UsageStatus {
		st := &v1alpha1.UsageStatus{Period: "2026-12", PeriodStart: &metav1.Time{Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
			ResetAt: &metav1.Time{Time: resetAt}, AsOf: metav1.NewMicroTime(now), Used: cpu(used)}
		if reserved != "" {
			st.Reserved = cpu(reserved)
		}
		return st
	}
	rolling := &v1alpha1.UsageLimits{Hours: cpu("10"), RollingDays: 7}
	decaying := &v1alpha1.UsageLimits{Hours: cpu("10"), HalfLife: &metav1.Duration{Duration: 8 * time.Hour}}
	for name, tc := range map[string]struct {
		limits *v1alpha1.UsageLimits
		usage  *v1alpha1.UsageStatus
		want   []hoursView
	}{
		"no hour budget": {usage: inDecember("1", "")},
		"none used yet, a day": {limits: &v1alpha1.UsageLimits{Hours: cpu("10"), Period: v1alpha1.PeriodDay},
			want: []hoursView{{Text: "requests.cpu: 10 resource-hours a day, none used yet"}}},
		"none used yet, rolling": {limits: rolling,
			want: []hoursView{{Text: "requests.cpu: 10 resource-hours in rolling 7 days, none used yet"}}},
		"none used yet, decaying": {limits: decaying,
			want: []hoursView{{Text: "requests.cpu: 10 resource-hours decaying with a half-life of 8h, none used yet"}}},
		"used and reserved in a month": {limits: month, usage: inDecember("3.5", "2"),
			want: []hoursView{{Text: "requests.cpu: 3.5 of 10 resource-hours used in 2026-12 (2 reserved); resets " + reset}}},
		"nothing reserved": {limits: month, usage: inDecember("0.125", ""),
			want: []hoursView{{Text: "requests.cpu: 0.125 of 10 resource-hours used in 2026-12; resets " + reset}}},
		"used and reserved reach the hours": {limits: month, usage: inDecember("8.25", "1.75"),
			want: []hoursView{{Text: "requests.cpu: 8.25 of 10 resource-hours used in 2026-12 (1.75 reserved); exhausted until " + reset, Exhausted: true}}},
		"used beyond the hours": {limits: month, usage: inDecember("12", ""),
			want: []hoursView{{Text: "requests.cpu: 12 of 10 resource-hours used in 2026-12; exhausted until " + reset, Exhausted: true}}},
		"a written status without used": {limits: month, usage: &v1alpha1.UsageStatus{Period: "2026-12", ResetAt: &metav1.Time{Time: resetAt}},
			want: []hoursView{{Text: "requests.cpu: 0 of 10 resource-hours used in 2026-12; resets " + reset}}},
		"rolling": {limits: rolling, usage: &v1alpha1.UsageStatus{Period: "last 7 days", Used: cpu("3.5"), Reserved: cpu("2")},
			want: []hoursView{{Text: "requests.cpu: 3.5 of 10 resource-hours used (2 reserved); rolling 7 days"}}},
		"rolling, exhausted": {limits: rolling, usage: &v1alpha1.UsageStatus{Period: "last 7 days", Used: cpu("9"), Reserved: cpu("1")},
			want: []hoursView{{Text: "requests.cpu: 9 of 10 resource-hours used (1 reserved); exhausted until enough is forgotten (rolling 7 days)", Exhausted: true}}},
		"decaying": {limits: decaying, usage: &v1alpha1.UsageStatus{Period: "decayed, half-life 8h0m0s", Used: cpu("2.0004")},
			want: []hoursView{{Text: "requests.cpu: 2.001 of 10 resource-hours used; decays with a half-life of 8h"}}},
		"decaying, exhausted": {limits: decaying, usage: &v1alpha1.UsageStatus{Period: "decayed, half-life 8h0m0s", Used: cpu("10")},
			want: []hoursView{{Text: "requests.cpu: 10 of 10 resource-hours used; exhausted until enough decays (half-life 8h)", Exhausted: true}}},
		"several resources, in name order": {
			limits: &v1alpha1.UsageLimits{Period: v1alpha1.PeriodMonth, Hours: corev1.ResourceList{
				"requests.nvidia.com/gpu": resource.MustParse("1000"), corev1.ResourceRequestsCPU: resource.MustParse("100m")}},
			usage: &v1alpha1.UsageStatus{Period: "2026-12", ResetAt: &metav1.Time{Time: resetAt},
				Used:     corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("982"), corev1.ResourceRequestsCPU: resource.MustParse("50m")},
				Reserved: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("48")}},
			want: []hoursView{
				{Text: "requests.cpu: 0.05 of 0.1 resource-hours used in 2026-12; resets " + reset},
				{Text: "requests.nvidia.com/gpu: 982 of 1000 resource-hours used in 2026-12 (48 reserved); exhausted until " + reset, Exhausted: true},
			}},
	} {
		t.Run(name, func(t *testing.T) {
			b := budget("team-a", "quota", "", cpu("4"), cpu("1"))
			b.Spec.UsageLimits, b.Status.Usage = tc.limits, tc.usage
			if diff := cmp.Diff(tc.want, budgetViewOf(&b).Hours); diff != "" {
				t.Errorf("hours (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHoursAmount(t *testing.T) {
	for in, want := range map[string]string{
		"0": "0", "10": "10", "3.5": "3.5", "3.500": "3.5", "0.125": "0.125", "50m": "0.05",
		"1m": "0.001", "1u": "0.001", "2.0004": "2.001", "1k": "1000", "2Gi": "2147483648",
		"1E": "1000000000000000000",
	} {
		if got := hoursAmount(resource.MustParse(in)); got != want {
			t.Errorf("hoursAmount(%s) = %q, want %q", in, got, want)
		}
	}
}
