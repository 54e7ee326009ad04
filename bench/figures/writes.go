package figures

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// ManagerWrites counts the API writes (every request but GET) the manager running in
// this process sends, by namespace and by the resource its path names ("pods",
// "pods/status", "events"): what an admission costs the API server, the pod's condition
// of why it waits included.
type ManagerWrites struct {
	mu sync.Mutex
	n  map[string]map[string]int // namespace → resource → writes
}

// wrap counts the writes sent through rt (every client the manager builds from its
// config has a transport of its own).
func (w *ManagerWrites) wrap(rt http.RoundTripper) http.RoundTripper {
	return writesTransport{w, rt}
}

type writesTransport struct {
	w    *ManagerWrites
	next http.RoundTripper
}

var namespacedPath = regexp.MustCompile(`/namespaces/([^/]+)/([a-z]+)(?:/[^/]+)?(/[a-z]+)?$`)

func (t writesTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		if m := namespacedPath.FindStringSubmatch(req.URL.Path); m != nil {
			t.w.mu.Lock()
			if t.w.n == nil {
				t.w.n = map[string]map[string]int{}
			}
			if t.w.n[m[1]] == nil {
				t.w.n[m[1]] = map[string]int{}
			}
			t.w.n[m[1]][m[2]+m[3]]++
			t.w.mu.Unlock()
		}
	}
	return t.next.RoundTrip(req)
}

// In returns the writes to namespace ns so far, by resource.
func (w *ManagerWrites) In(ns string) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.n[ns])
}

// Settled waits until the writes to ns hold still for a second (the manager's last
// status and condition writes of a release come after its last ungate), and returns
// them.
func (w *ManagerWrites) Settled(ctx context.Context, ns string) (map[string]int, error) {
	var last map[string]int
	stable := 0
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		n := w.In(ns)
		if maps.Equal(n, last) {
			stable++
		} else {
			last, stable = n, 0
		}
		return stable >= 4, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the manager's writes to %s to settle: %w", ns, err)
	}
	return last, nil
}
