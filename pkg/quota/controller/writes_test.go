package controller_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
)

// writeCounter counts the API writes (every request but get, list and watch) a client
// sends to namespace ns, by the kind of resource their path names. Other tests' pods
// and budgets may still be about, and the manager watches every namespace.
type writeCounter struct {
	ns string
	mu sync.Mutex
	n  map[string]int
}

// wrap counts the writes sent through rt (every client the manager builds from its
// config has a transport of its own).
func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return countingTransport{w, rt}
}

type countingTransport struct {
	w    *writeCounter
	next http.RoundTripper
}

var writePath = regexp.MustCompile(`/namespaces/([^/]+)/([a-z]+)(?:/[^/]+)?(/status)?$`)

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if w := t.w; req.Method != http.MethodGet {
		var kind, ns string
		if m := writePath.FindStringSubmatch(req.URL.Path); m != nil {
			kind, ns = m[2]+m[3], m[1]
		}
		if ns == w.ns {
			w.mu.Lock()
			w.n[kind]++
			w.mu.Unlock()
		}
	}
	return t.next.RoundTrip(req)
}

func (w *writeCounter) counts() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.n))
	for k, v := range w.n {
		out[k] = v
	}
	return out
}

// With the default settings, admitting a pod is one API write: the ungate patch. The
// Admitted events are the Budget's, a few for the whole batch, and sum up every pod.
func TestAdmissionIsOneWrite(t *testing.T) {
	const pods = 30
	ns := newNamespace(t, true)
	mustCreate(t, budget(ns, "team", cpu("100"), ""))
	for i := range pods {
		mustCreate(t, gatedPod(ns, podName(i), "1"))
	}
	counter := &writeCounter{ns: ns, n: map[string]int{}}
	cfg := rest.CopyConfig(managerSA)
	cfg.Wrap(counter.wrap)
	m := startManagerWithConfig(t, cfg, nil, false)

	testbed.Poll(t, time.Minute, "every pod admitted", func(context.Context) (bool, error) {
		gated, ungated := countGated(t, ns)
		return gated == 0 && ungated == pods, nil
	})
	// The Admitted events of the Budget sum up to every pod: at once for the first
	// round, then at most one more per interval.
	var admittedEvents []string
	testbed.Poll(t, admittedEventWait, "Admitted events on the Budget counting every pod", func(context.Context) (bool, error) {
		evs, err := clientset.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		admittedEvents = admittedEvents[:0]
		sum := 0
		for _, e := range evs.Items {
			if e.ReportingController != managerName && e.DeprecatedSource.Component != managerName {
				continue // the scheduler's
			}
			if e.Regarding.Kind == "Pod" {
				return false, fmt.Errorf("event %s %q on pod %s: admitted pods get no events by default", e.Reason, e.Note, e.Regarding.Name)
			}
			if e.Reason != "Admitted" {
				continue
			}
			if e.Regarding.Kind != "Budget" || e.Regarding.Name != "team" {
				return false, fmt.Errorf("Admitted event on %s %s, want Budget team", e.Regarding.Kind, e.Regarding.Name)
			}
			admittedEvents = append(admittedEvents, e.Note)
			n, err := strconv.Atoi(strings.Fields(e.Note)[1])
			if err != nil {
				return false, fmt.Errorf("Admitted event %q does not say how many pods: %w", e.Note, err)
			}
			sum += n
		}
		return sum == pods, nil
	})
	m.stop(t)

	got := counter.counts()
	t.Logf("the manager's writes for %d admissions: %v; Admitted events: %q", pods, got, admittedEvents)
	if got["pods"] != pods {
		t.Errorf("%d writes to pods for %d admissions, want exactly one each", got["pods"], pods)
	}
	if n := got["events"]; n > len(admittedEvents)+2 {
		t.Errorf("%d event writes, want no more than the %d Admitted events of the Budget and its state events", n, len(admittedEvents))
	}
	// No pod waited, so none carries the condition of why it waits: nothing to set or
	// remove (TestPodConditionFollowsReason).
	if n := got["pods/status"]; n != 0 {
		t.Errorf("%d writes to pods/status for pods admitted at once, want none", n)
	}
	for kind, n := range got {
		switch kind {
		case "pods", "events", "budgets/status", "pods/status":
		default:
			t.Errorf("%d unexpected writes to %s", n, kind)
		}
	}
	b := &v1alpha1.Budget{}
	if err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "team"}, b); err != nil {
		t.Fatal(err)
	}
	if b.Status.AdmittedPods != pods {
		t.Errorf("status.admittedPods = %d, want %d", b.Status.AdmittedPods, pods)
	}
}

// admittedEventWait is how long a test waits for the Budget's Admitted events: the
// interval between two (10 s), the status writer's idle wake-up (10 s) and a margin.
const admittedEventWait = time.Minute
