package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
)

// The page at 10,000 gated pods: go test -run '^$' -bench . -benchmem ./pkg/ui

const benchPods = 10000

func gatedPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = statsPod(fmt.Sprintf("job-%05d", i), -time.Duration(i)*time.Second, 0, 0, true)
	}
	return pods
}

func pendingPodList(n int) *visv1.PendingPodList {
	l := &visv1.PendingPodList{BudgetKind: "Budget", State: "Open", Total: benchPods, Items: make([]visv1.PendingPod, n)}
	l.Namespace, l.Name = "team-a", "quota"
	for i := range l.Items {
		l.Items[i] = visv1.PendingPod{Namespace: "team-a", Name: fmt.Sprintf("job-%05d", i), UID: fmt.Sprintf("uid-%05d", i), Position: int64(i + 1),
			Requests: cpu("1"), CreationTimestamp: metav1.NewTime(now), WaitingSeconds: int64(i), Queue: visv1.QueueInadmissible,
			ReasonCode: "InsufficientQuota", Reason: fmt.Sprintf("requests.cpu: 1 requested, 0 free in Budget team-a/quota; position %d of %d", i+1, benchPods)}
	}
	return l
}

func benchTemplates(b *testing.B) *Server {
	b.Helper()
	tmpl, err := parseTemplates()
	if err != nil {
		b.Fatal(err)
	}
	return &Server{tmpl: tmpl}
}

// BenchmarkQueuePage is one push of a budget's page at 10,000 gated pods: decode the
// visibility API's page of 100 (as the server reads it) and render the view.
func BenchmarkQueuePage(b *testing.B) {
	s := benchTemplates(b)
	raw, err := json.Marshal(pendingPodList(podPageSize))
	if err != nil {
		b.Fatal(err)
	}
	u, _ := url.Parse("/budgets/team-a/quota?page=3")
	b.ReportAllocs()
	var size int
	for b.Loop() {
		var l visv1.PendingPodList
		if err := json.Unmarshal(raw, &l); err != nil {
			b.Fatal(err)
		}
		v := &view{Kind: "budget", Title: "Budget team-a/quota", Queue: queueRows(&l, now), QueueTotal: l.Total}
		v.Paging = pagingOf(u, 2, podPageSize, int64(len(v.Queue)), l.Total)
		var out bytes.Buffer
		if err := s.tmpl.ExecuteTemplate(&out, "view", v); err != nil {
			b.Fatal(err)
		}
		size = out.Len()
	}
	b.ReportMetric(float64(size), "html-bytes")
}

// BenchmarkPodsPage is one push of the pod list at 10,000 gated pods in the watch:
// search, sort, page and render 100, and the last hour's statistics over all of them.
func BenchmarkPodsPage(b *testing.B) {
	s := benchTemplates(b)
	pods := gatedPods(benchPods)
	u, _ := url.Parse("/pods?q=job&page=50")
	b.ReportAllocs()
	var size int
	for b.Loop() {
		rows, total := podList(pods, "team-a", "job", 49, now)
		v := &view{Kind: "pods", Title: "Pods", Pods: rows, PodTotal: total, Stats: lastHour(pods, now)}
		v.Paging = pagingOf(u, 49, podPageSize, int64(len(rows)), int64(total))
		var out bytes.Buffer
		if err := s.tmpl.ExecuteTemplate(&out, "view", v); err != nil {
			b.Fatal(err)
		}
		size = out.Len()
	}
	b.ReportMetric(float64(size), "html-bytes")
}

// BenchmarkWholeQueue renders all 10,000 gated pods of a queue in one table, as a page
// without paging would: what paging saves.
func BenchmarkWholeQueue(b *testing.B) {
	s := benchTemplates(b)
	l := pendingPodList(benchPods)
	b.ReportAllocs()
	var size int
	for b.Loop() {
		v := &view{Kind: "budget", Title: "Budget team-a/quota", Queue: queueRows(l, now), QueueTotal: l.Total}
		cw := &countingWriter{}
		if err := s.tmpl.ExecuteTemplate(cw, "view", v); err != nil {
			b.Fatal(err)
		}
		size = cw.n
	}
	b.ReportMetric(float64(size), "html-bytes")
}

type countingWriter struct{ n int }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

var _ io.Writer = (*countingWriter)(nil)
