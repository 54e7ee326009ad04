package app

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
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
