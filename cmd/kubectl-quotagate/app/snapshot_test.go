package app

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
)

// The URL source sends the token and turns the manager's refusals into errors that say
// what to do.
func TestURLSource(t *testing.T) {
	tests := map[string]struct {
		status   int
		body     string
		wantErr  string
		wantHint string
	}{
		"a snapshot": {status: http.StatusOK, body: `{"budgets":[{"budget":{"name":"org"},"state":"Open","strategy":"StrictFIFO","pods":[]}]}`},
		"no or a rejected token": {
			status: http.StatusUnauthorized, body: "Unauthorized",
			wantErr: "HTTP 401: Unauthorized", wantHint: hintUnauthorized,
		},
		"a token the TokenReview cannot parse": {
			status: http.StatusInternalServerError, body: "Authentication failed",
			wantErr: "HTTP 500: Authentication failed", wantHint: hintUnauthorized,
		},
		"no RBAC for /debug/queues": {
			status: http.StatusForbidden, body: "Authorization denied for user alice",
			wantErr: "HTTP 403: Authorization denied for user alice", wantHint: hintForbidden,
		},
		"not a snapshot": {
			status: http.StatusOK, body: "<html>",
			wantErr: "decoding the snapshot: invalid character '<' looking for beginning of value",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var gotAuth, gotPath string
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotAuth, gotPath = r.Header.Get("Authorization"), r.URL.Path
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			src, err := newURLSource(srv.URL, "s3cret", "", true)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := src.Snapshot(t.Context())
			if gotAuth != "Bearer s3cret" || gotPath != debugQueuesPath {
				t.Errorf("request: Authorization %q, path %q; want the bearer token and %s", gotAuth, gotPath, debugQueuesPath)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Snapshot: %v", err)
				}
				if len(snap.Budgets) != 1 || snap.Budgets[0].Budget.Name != "org" {
					t.Errorf("snapshot: %+v", snap)
				}
				return
			}
			var ue *UnreachableError
			if !errors.As(err, &ue) {
				t.Fatalf("Snapshot error %v is not an UnreachableError", err)
			}
			if diff := cmp.Diff(tc.wantErr, ue.Err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantHint, ue.Hint); diff != "" {
				t.Errorf("hint (-want +got):\n%s", diff)
			}
		})
	}
}

// The manager's certificate is verified unless the user says otherwise.
func TestURLSourceVerifiesTheManager(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	src, err := newURLSource(srv.URL, "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Snapshot(t.Context()); err == nil {
		t.Errorf("Snapshot trusted a certificate no CA vouches for")
	}
	if _, err := newURLSource("127.0.0.1:8443", "", "", false); err == nil {
		t.Errorf("newURLSource accepted a URL without scheme")
	}
}

// With --manager-url, queue and why read the estimated starts the manager's snapshot
// carries: queue's ETA column and why's "Estimated start" line show them as they do
// from the visibility API; a pod without one has "-" and no line.
func TestSnapshotCarriesEstimates(t *testing.T) {
	w := teamsWorld(t)
	ref := func(name string) quota.PodRef {
		return quota.PodRef{UID: types.UID("team-a-" + name), Namespace: "team-a", Name: name}
	}
	w.starts[ref("train-1").UID] = estimate.Start{Pod: ref("train-1"), Known: true,
		Median: now.Add(12 * time.Minute), Low: now.Add(10 * time.Minute), High: now.Add(30 * time.Minute), Ends: 2, Samples: 5}
	w.starts[ref("huge").UID] = estimate.Start{Pod: ref("huge"), Unknown: estimate.UnknownNeverFits,
		Reason: "requests.cpu: 6 requested, more than the 4 hard of Budget team-a/team-a"}

	out, errOut, err := run(t, w.env(nil), "queue", "team-a/team-a")
	if err != nil {
		t.Fatalf("queue: %v\n%s", err, errOut)
	}
	want := `Budget team-a/team-a: Open, BestEffortFIFO, 3 gated
POSITION   POD              PRIORITY   REQUESTS   WAITING   QUEUE          ETA       REASON
1          team-a/huge      0          cpu=6      9m30s     parked         unknown   requests.cpu: 6 requested, more than the 4 hard of Budget team-a/team-a: it can never fit
2          team-a/train-1   0          cpu=2      8m        inadmissible   12m       requests.cpu: 2 requested, 0 free in Budget team-a/team-a; position 2 of 3
3          team-a/train-3   0          cpu=1      6m        inadmissible   -         requests.cpu: 1 requested, 0 free in Budget team-a/team-a; position 3 of 3
`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("queue from the snapshot (-want +got):\n%s", diff)
	}

	out, errOut, err = run(t, w.env(nil), "why", "team-a/train-1")
	if err != nil {
		t.Fatalf("why: %v\n%s", err, errOut)
	}
	if line := "Estimated start: in 12m (between 10m and 30m), from 2 pod ends, 5 samples at least\n"; !strings.Contains(out, line) {
		t.Errorf("why from the snapshot lacks %q:\n%s", line, out)
	}
	out, errOut, err = run(t, w.env(nil), "why", "team-a/train-3")
	if err != nil {
		t.Fatalf("why: %v\n%s", err, errOut)
	}
	if strings.Contains(out, "Estimated start") {
		t.Errorf("why from the snapshot gives train-3, which has no estimate, one:\n%s", out)
	}
}
